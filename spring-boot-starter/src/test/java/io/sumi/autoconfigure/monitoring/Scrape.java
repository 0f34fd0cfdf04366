package io.sumi.autoconfigure.monitoring;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** The series of a Prometheus text-format scrape: metric name to the label sets it was exported with. */
final class Scrape {

    private static final Pattern SAMPLE = Pattern.compile("^([a-zA-Z_:][a-zA-Z0-9_:]*)(\\{(.*)\\})?\\s+\\S+.*$");
    private static final Pattern LABEL = Pattern.compile("([a-zA-Z_][a-zA-Z0-9_]*)=\"((?:[^\"\\\\]|\\\\.)*)\",?");

    private final Map<String, List<Map<String, String>>> series;

    private Scrape(Map<String, List<Map<String, String>>> series) {
        this.series = series;
    }

    static Scrape parse(String text) {
        Map<String, List<Map<String, String>>> series = new HashMap<>();
        for (String line : text.split("\n")) {
            if (line.isBlank() || line.startsWith("#")) {
                continue;
            }
            Matcher sample = SAMPLE.matcher(line.trim());
            if (!sample.matches()) {
                throw new IllegalArgumentException("Not a sample line: " + line);
            }
            Map<String, String> labels = new LinkedHashMap<>();
            if (sample.group(3) != null) {
                Matcher label = LABEL.matcher(sample.group(3));
                while (label.find()) {
                    labels.put(label.group(1), label.group(2));
                }
            }
            series.computeIfAbsent(sample.group(1), name -> new ArrayList<>()).add(labels);
        }
        return new Scrape(series);
    }

    boolean has(String metric) {
        return series.containsKey(metric);
    }

    List<Map<String, String>> series(String metric) {
        return series.getOrDefault(metric, List.of());
    }

    /** Metric names in the scrape that start with {@code prefix}, to help a reader of a failure. */
    List<String> namesStartingWith(String prefix) {
        return series.keySet().stream()
                .filter(name -> name.startsWith(prefix))
                .sorted()
                .toList();
    }
}
