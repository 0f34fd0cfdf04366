package io.sumi.faults.driver;

import java.time.Duration;

/**
 * What one fault run does.
 *
 * @param name the run's name (its logs go to {@code target/fault-runs/<name>})
 * @param guard whether the application's listeners are Sumi's idempotent handlers; false is the
 *     negative control
 * @param instances application JVMs
 * @param ordersPerInstance orders each instance creates
 * @param ratePerInstance orders per second each instance creates
 * @param kills {@code kill -9} of a random instance at a random moment of the load (each one
 *     restarted at once)
 * @param postgresRestart whether PostgreSQL is stopped ({@code -m fast}) and started once
 * @param brokerKill whether the broker is killed ({@code kill -9}) and restarted once
 * @param drainTimeout how long the run may take to become quiescent after the load
 * @param seed the random seed (printed, to replay the fault times)
 * @param errorHandler {@code none}: no error-handler bean, Spring Kafka's default applies, as in an
 *     application that configures none; {@code retry}: the application defines a
 *     {@code DefaultErrorHandler} bean retrying every 500 ms without limit (from
 *     {@code sumi.faults.error-handler}, default {@value #DEFAULT_ERROR_HANDLER})
 */
public record FaultScenario(
        String name,
        boolean guard,
        int instances,
        int ordersPerInstance,
        int ratePerInstance,
        int kills,
        boolean postgresRestart,
        boolean brokerKill,
        Duration drainTimeout,
        long seed,
        String errorHandler) {

    static final String DEFAULT_ERROR_HANDLER = "none";

    private static String configuredErrorHandler() {
        return System.getProperty("sumi.faults.error-handler", DEFAULT_ERROR_HANDLER);
    }

    /** The CI version: 3,000 orders, 4 kills, one PostgreSQL restart, one broker crash. */
    public static FaultScenario shortRun(boolean guard, long seed) {
        return new FaultScenario(
                (guard ? "guarded" : "control") + "-short",
                guard,
                3,
                1000,
                50,
                4,
                true,
                true,
                Duration.ofSeconds(120),
                seed,
                configuredErrorHandler());
    }

    /** The full version: 20,100 orders, 12 kills, one PostgreSQL restart, one broker crash. */
    public static FaultScenario fullRun(boolean guard, long seed) {
        return new FaultScenario(
                (guard ? "guarded" : "control") + "-full",
                guard,
                3,
                6700,
                40,
                12,
                true,
                true,
                Duration.ofSeconds(240),
                seed,
                configuredErrorHandler());
    }

    public static FaultScenario of(String scale, boolean guard, long seed) {
        return switch (scale) {
            case "short" -> shortRun(guard, seed);
            case "full" -> fullRun(guard, seed);
            // For working on the suite itself: a minute, one fault of each kind.
            case "tiny" ->
                new FaultScenario(
                        (guard ? "guarded" : "control") + "-tiny",
                        guard,
                        3,
                        300,
                        20,
                        1,
                        true,
                        true,
                        Duration.ofSeconds(60),
                        seed,
                        configuredErrorHandler());
            default ->
                throw new IllegalArgumentException("sumi.faults.scale must be short, full or tiny, not " + scale);
        };
    }

    int totalOrders() {
        return instances * ordersPerInstance;
    }

    /** How long the load lasts without faults. */
    Duration loadDuration() {
        return Duration.ofMillis(1000L * ordersPerInstance / ratePerInstance);
    }
}
