package io.sumi.consumer;

import java.time.Duration;
import java.time.format.DateTimeParseException;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Parses the durations written in annotations: {@code 500ms}, {@code 30s}, {@code 5m}, {@code 2h},
 * {@code 14d}, or ISO-8601 ({@code PT5M}), as Spring Boot does in properties.
 */
final class Durations {

    private static final Pattern SIMPLE = Pattern.compile("(\\d+)\\s*(ms|s|m|h|d)");

    private Durations() {}

    /**
     * Parses a duration written as ISO-8601 or with a unit suffix ({@code 30s}, {@code 5m}).
     *
     * @throws IllegalArgumentException naming {@code what} if {@code text} is not a duration
     */
    public static Duration parse(String text, String what) {
        String value = text.trim().toLowerCase(Locale.ROOT);
        Matcher matcher = SIMPLE.matcher(value);
        if (matcher.matches()) {
            long amount = Long.parseLong(matcher.group(1));
            return switch (matcher.group(2)) {
                case "ms" -> Duration.ofMillis(amount);
                case "s" -> Duration.ofSeconds(amount);
                case "m" -> Duration.ofMinutes(amount);
                case "h" -> Duration.ofHours(amount);
                default -> Duration.ofDays(amount);
            };
        }
        try {
            return Duration.parse(text.trim());
        } catch (DateTimeParseException ex) {
            throw new IllegalArgumentException(
                    "Invalid " + what + " '" + text + "': expected e.g. 30s, 5m, 2h, 14d or PT5M", ex);
        }
    }
}
