package io.sumi.autoconfigure.monitoring;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.yaml.snakeyaml.LoaderOptions;
import org.yaml.snakeyaml.Yaml;
import org.yaml.snakeyaml.constructor.SafeConstructor;

/**
 * The monitoring files Sumi ships ({@code monitoring/} at the top of the repository): the
 * Prometheus rule file and the Grafana dashboard, read as plain data (the dashboard is JSON, which
 * YAML reads too), with a structural check of the rule file for machines without promtool.
 */
final class MonitoringAssets {

    static final Path ROOT = locateRoot();
    static final Path ALERTS = ROOT.resolve("monitoring/prometheus/sumi-alerts.yml");
    static final Path DASHBOARD = ROOT.resolve("monitoring/grafana/sumi-dashboard.json");

    private static final Set<String> RULE_KEYS =
            Set.of("alert", "record", "expr", "for", "keep_firing_for", "labels", "annotations");

    private MonitoringAssets() {}

    private static Path locateRoot() {
        Path dir = Path.of("").toAbsolutePath();
        while (dir != null && !Files.isDirectory(dir.resolve("monitoring/prometheus"))) {
            dir = dir.getParent();
        }
        if (dir == null) {
            throw new IllegalStateException(
                    "No monitoring/ folder above " + Path.of("").toAbsolutePath());
        }
        return dir;
    }

    static Object load(Path file) {
        try {
            return new Yaml(new SafeConstructor(new LoaderOptions())).load(Files.readString(file));
        } catch (IOException ex) {
            throw new UncheckedIOException(ex);
        }
    }

    /** Alert name to expression, from a rule file. */
    @SuppressWarnings("unchecked")
    static Map<String, String> alertExpressions(Object rules) {
        Map<String, String> expressions = new LinkedHashMap<>();
        for (Object group : (List<Object>) ((Map<String, Object>) rules).get("groups")) {
            for (Object rule : (List<Object>) ((Map<String, Object>) group).get("rules")) {
                Map<String, Object> map = (Map<String, Object>) rule;
                expressions.put(String.valueOf(map.get("alert")), String.valueOf(map.get("expr")));
            }
        }
        return expressions;
    }

    /** Panel title and refId to expression, from a dashboard (rows' nested panels included). */
    @SuppressWarnings("unchecked")
    static Map<String, String> dashboardExpressions(Object dashboard) {
        Map<String, String> expressions = new LinkedHashMap<>();
        List<Object> panels = new ArrayList<>((List<Object>) ((Map<String, Object>) dashboard).get("panels"));
        for (int i = 0; i < panels.size(); i++) {
            Map<String, Object> panel = (Map<String, Object>) panels.get(i);
            if (panel.get("panels") instanceof List<?> nested) {
                panels.addAll((List<Object>) nested);
            }
            if (panel.get("targets") instanceof List<?> targets) {
                for (Object target : targets) {
                    Map<String, Object> map = (Map<String, Object>) target;
                    expressions.put(
                            panel.get("title") + " [" + map.get("refId") + "]", String.valueOf(map.get("expr")));
                }
            }
        }
        return expressions;
    }

    /**
     * What is wrong with the structure of a rule file (what promtool would refuse first): groups
     * with a unique name and rules; each rule an alert (or record) with an expression, known keys,
     * a duration in {@code for}, string labels and annotations.
     */
    @SuppressWarnings("unchecked")
    static List<String> ruleFileProblems(Object rules) {
        List<String> problems = new ArrayList<>();
        if (!(rules instanceof Map<?, ?> top) || !(top.get("groups") instanceof List<?> groups) || groups.isEmpty()) {
            return List.of("the file has no groups list");
        }
        Set<Object> groupNames = new java.util.HashSet<>();
        Set<Object> alertNames = new java.util.HashSet<>();
        for (Object group : groups) {
            if (!(group instanceof Map<?, ?> g) || !(g.get("name") instanceof String name) || name.isBlank()) {
                problems.add("a group has no name: " + group);
                continue;
            }
            if (!groupNames.add(name)) {
                problems.add("group " + name + " is defined twice");
            }
            if (!(g.get("rules") instanceof List<?> list) || list.isEmpty()) {
                problems.add("group " + name + " has no rules");
                continue;
            }
            for (Object rule : list) {
                if (!(rule instanceof Map<?, ?> r)) {
                    problems.add("group " + name + " has a rule that is not a map: " + rule);
                    continue;
                }
                Object alert = r.get("alert");
                String where = "rule " + (alert != null ? alert : r.get("record")) + " in group " + name;
                if (!(alert instanceof String a) || !a.matches("[a-zA-Z_][a-zA-Z0-9_]*")) {
                    problems.add(where + ": alert must be a name");
                } else if (!alertNames.add(a)) {
                    problems.add(where + ": alert name used twice");
                }
                if (!(r.get("expr") instanceof String expr) || expr.isBlank()) {
                    problems.add(where + ": no expr");
                }
                for (Object key : r.keySet()) {
                    if (!RULE_KEYS.contains(String.valueOf(key))) {
                        problems.add(where + ": unknown key " + key);
                    }
                }
                if (r.containsKey("for") && !String.valueOf(r.get("for")).matches("(\\d+(ms|s|m|h|d|w|y))+")) {
                    problems.add(where + ": for is not a duration: " + r.get("for"));
                }
                for (String section : List.of("labels", "annotations")) {
                    if (r.containsKey(section)) {
                        if (!(r.get(section) instanceof Map<?, ?> entries)) {
                            problems.add(where + ": " + section + " is not a map");
                        } else {
                            ((Map<Object, Object>) entries).forEach((k, v) -> {
                                if (!(k instanceof String) || !(v instanceof String)) {
                                    problems.add(where + ": " + section + " entry " + k + " is not a string");
                                }
                            });
                        }
                    }
                }
                if (!(r.get("annotations") instanceof Map<?, ?> annotations) || !annotations.containsKey("summary")) {
                    problems.add(where + ": no summary annotation");
                }
            }
        }
        return problems;
    }
}
