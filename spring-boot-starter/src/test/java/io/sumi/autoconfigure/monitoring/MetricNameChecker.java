package io.sumi.autoconfigure.monitoring;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * Checks PromQL expressions against a real scrape: every metric they select exists, every label
 * they match on exists on that metric, every label value they match exactly exists, and every
 * label they group by exists on one of the metrics they read (or is a label Prometheus adds to
 * every target, {@code job} and {@code instance}). Names drift silently otherwise: a renamed meter
 * leaves an alert that can never fire.
 */
final class MetricNameChecker {

    static final Set<String> TARGET_LABELS = Set.of("job", "instance");

    private final Scrape scrape;

    MetricNameChecker(Scrape scrape) {
        this.scrape = scrape;
    }

    /** What is wrong with {@code expression}, each problem prefixed with {@code where}; empty when nothing is. */
    List<String> problems(String where, String expression) {
        List<String> problems = new ArrayList<>();
        PromQl.Parsed parsed;
        try {
            parsed = PromQl.parse(expression);
        } catch (IllegalArgumentException ex) {
            return List.of(where + ": " + ex.getMessage());
        }
        if (parsed.selectors().isEmpty()) {
            problems.add(where + ": reads no metric: " + expression);
        }
        Set<String> labelsRead = new HashSet<>(TARGET_LABELS);
        for (PromQl.Selector selector : parsed.selectors()) {
            String metric = selector.metric();
            if (!scrape.has(metric)) {
                String stem = metric.contains("_") ? metric.substring(0, metric.indexOf('_') + 1) : metric;
                problems.add(where + ": metric " + metric + " is not in the scrape (names there starting with " + stem
                        + ": " + scrape.namesStartingWith(stem) + ")");
                continue;
            }
            scrape.series(metric).forEach(series -> labelsRead.addAll(series.keySet()));
            for (PromQl.LabelMatcher matcher : selector.matchers()) {
                boolean labelExists =
                        scrape.series(metric).stream().anyMatch(series -> series.containsKey(matcher.label()));
                if (!labelExists) {
                    problems.add(where + ": metric " + metric + " has no label " + matcher.label());
                } else if (matcher.operator().equals("=") && !matcher.value().isEmpty()) {
                    boolean valueExists = scrape.series(metric).stream()
                            .anyMatch(series -> matcher.value().equals(series.get(matcher.label())));
                    if (!valueExists) {
                        problems.add(where + ": no series of " + metric + " has " + matcher.label() + "=\""
                                + matcher.value() + "\" (values: "
                                + scrape.series(metric).stream()
                                        .map(series -> series.get(matcher.label()))
                                        .distinct()
                                        .toList()
                                + ")");
                    }
                } else if (matcher.operator().equals("=~")) {
                    for (String alternative : matcher.value().split("\\|")) {
                        if (alternative.matches("[a-zA-Z0-9_.]+")
                                && scrape.series(metric).stream()
                                        .noneMatch(series -> alternative.equals(series.get(matcher.label())))) {
                            problems.add(where + ": no series of " + metric + " has " + matcher.label() + "=\""
                                    + alternative + "\" (from the regex " + matcher.value() + ")");
                        }
                    }
                }
            }
        }
        for (String label : parsed.groupingLabels()) {
            if (!labelsRead.contains(label)) {
                problems.add(where + ": groups or matches on label " + label + ", which no metric it reads has");
            }
        }
        return problems;
    }
}
