package io.sumi.autoconfigure.monitoring;

import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Just enough of PromQL to find what an expression reads: its metric selectors (name and label
 * matchers) and the labels it groups or matches on. Functions, aggregation operators, keywords,
 * numbers, range and offset durations (including Grafana's {@code $__rate_interval}) and string
 * arguments are recognised and skipped; every other identifier is a metric name.
 */
final class PromQl {

    record LabelMatcher(String label, String operator, String value) {}

    record Selector(String metric, List<LabelMatcher> matchers) {}

    record Parsed(List<Selector> selectors, Set<String> groupingLabels) {}

    private static final Set<String> FUNCTIONS = Set.of(
            "abs",
            "absent",
            "absent_over_time",
            "ceil",
            "changes",
            "clamp",
            "clamp_max",
            "clamp_min",
            "day_of_month",
            "day_of_week",
            "day_of_year",
            "days_in_month",
            "delta",
            "deriv",
            "exp",
            "floor",
            "histogram_quantile",
            "histogram_count",
            "histogram_sum",
            "holt_winters",
            "hour",
            "idelta",
            "increase",
            "irate",
            "label_join",
            "label_replace",
            "ln",
            "log2",
            "log10",
            "minute",
            "month",
            "predict_linear",
            "rate",
            "resets",
            "round",
            "scalar",
            "sgn",
            "sort",
            "sort_desc",
            "sqrt",
            "time",
            "timestamp",
            "vector",
            "year",
            "avg_over_time",
            "min_over_time",
            "max_over_time",
            "sum_over_time",
            "count_over_time",
            "quantile_over_time",
            "stddev_over_time",
            "stdvar_over_time",
            "last_over_time",
            "present_over_time");
    private static final Set<String> AGGREGATIONS = Set.of(
            "sum",
            "min",
            "max",
            "avg",
            "group",
            "stddev",
            "stdvar",
            "count",
            "count_values",
            "bottomk",
            "topk",
            "quantile");
    private static final Set<String> KEYWORDS = Set.of("and", "or", "unless", "bool", "offset", "inf", "nan");
    private static final Set<String> GROUPING = Set.of("by", "without", "on", "ignoring", "group_left", "group_right");

    private static final Pattern TOKEN =
            Pattern.compile("\\s*(?:(?<string>\"(?:[^\"\\\\]|\\\\.)*\"|'(?:[^'\\\\]|\\\\.)*')"
                    + "|(?<range>\\[[^\\]]*\\])"
                    // Numbers, and durations (offset 5m, 1h30m) as one token.
                    + "|(?<number>\\d+(?:\\.\\d+)?(?:[eE][-+]?\\d+)?(?:(?:ms|[smhdwy])(?:\\d+(?:ms|[smhdwy]))*)?)"
                    + "|(?<ident>[a-zA-Z_:][a-zA-Z0-9_:]*)"
                    + "|(?<punct>[(){},]|=~|!~|!=|==|>=|<=|=|[-+*/%^<>]))");
    private static final Pattern MATCHER =
            Pattern.compile("\\s*([a-zA-Z_][a-zA-Z0-9_]*)\\s*(=~|!~|!=|=)\\s*\"((?:[^\"\\\\]|\\\\.)*)\"\\s*,?");

    private PromQl() {}

    static Parsed parse(String expression) {
        List<String> tokens = tokens(expression);
        List<Selector> selectors = new ArrayList<>();
        Set<String> grouping = new LinkedHashSet<>();
        for (int i = 0; i < tokens.size(); i++) {
            String token = tokens.get(i);
            if (!Character.isLetter(token.charAt(0)) && token.charAt(0) != '_' && token.charAt(0) != ':') {
                continue;
            }
            String next = i + 1 < tokens.size() ? tokens.get(i + 1) : "";
            String lower = token.toLowerCase(java.util.Locale.ROOT);
            if (GROUPING.contains(lower)) {
                if (next.equals("(")) {
                    int j = i + 2;
                    for (; j < tokens.size() && !tokens.get(j).equals(")"); j++) {
                        if (!tokens.get(j).equals(",")) {
                            grouping.add(tokens.get(j));
                        }
                    }
                    i = j;
                }
                continue;
            }
            if (KEYWORDS.contains(lower)
                    || ((FUNCTIONS.contains(token) || AGGREGATIONS.contains(token))
                            && (next.equals("(") || GROUPING.contains(next)))) {
                continue;
            }
            List<LabelMatcher> matchers = new ArrayList<>();
            if (next.startsWith("{")) {
                matchers = matchers(next);
                i++;
            }
            selectors.add(new Selector(token, matchers));
        }
        return new Parsed(selectors, grouping);
    }

    private static List<String> tokens(String expression) {
        List<String> tokens = new ArrayList<>();
        int position = 0;
        while (position < expression.length()) {
            if (Character.isWhitespace(expression.charAt(position))) {
                position++;
                continue;
            }
            if (expression.charAt(position) == '{') {
                // A whole matcher list is one token (its strings may hold any character).
                int end = matcherListEnd(expression, position);
                tokens.add(expression.substring(position, end + 1));
                position = end + 1;
                continue;
            }
            Matcher matcher = TOKEN.matcher(expression);
            matcher.region(position, expression.length());
            if (!matcher.lookingAt()) {
                throw new IllegalArgumentException(
                        "Cannot read PromQL at " + position + ": " + expression.substring(position));
            }
            if (matcher.group("string") == null && matcher.group("range") == null) {
                String token = matcher.group("number") != null
                        ? matcher.group("number")
                        : matcher.group("ident") != null ? matcher.group("ident") : matcher.group("punct");
                tokens.add(token);
            } else if (matcher.group("string") != null) {
                tokens.add("\"");
            }
            position = matcher.end();
        }
        return tokens;
    }

    private static int matcherListEnd(String expression, int open) {
        boolean inString = false;
        for (int i = open + 1; i < expression.length(); i++) {
            char c = expression.charAt(i);
            if (inString) {
                if (c == '\\') {
                    i++;
                } else if (c == '"') {
                    inString = false;
                }
            } else if (c == '"') {
                inString = true;
            } else if (c == '}') {
                return i;
            }
        }
        throw new IllegalArgumentException("Unclosed { in " + expression);
    }

    private static List<LabelMatcher> matchers(String block) {
        String inner = block.substring(1, block.length() - 1);
        List<LabelMatcher> matchers = new ArrayList<>();
        Matcher matcher = MATCHER.matcher(inner);
        int position = 0;
        while (position < inner.length()) {
            matcher.region(position, inner.length());
            if (!matcher.lookingAt()) {
                if (inner.substring(position).isBlank()) {
                    break;
                }
                throw new IllegalArgumentException("Cannot read label matchers at: " + inner.substring(position));
            }
            matchers.add(new LabelMatcher(matcher.group(1), matcher.group(2), matcher.group(3)));
            position = matcher.end();
        }
        return matchers;
    }
}
