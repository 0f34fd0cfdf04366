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
 * @param brokerRestart whether the broker is shut down gracefully and started again once
 *     (RabbitMQ mode: {@code rabbitmqctl shutdown})
 * @param drainTimeout how long the run may take to become quiescent after the load
 * @param seed the random seed (printed, to replay the fault times)
 * @param errorHandler {@code none}: no error-handler bean, Spring Kafka's default applies, as in an
 *     application that configures none; {@code retry}: the application defines a
 *     {@code DefaultErrorHandler} bean retrying every 500 ms without limit (from
 *     {@code sumi.faults.error-handler}, default {@value #DEFAULT_ERROR_HANDLER}); in the RabbitMQ
 *     mode always {@value #RABBIT_RETRY}: Boot's stateless retry interceptor
 *     ({@code spring.rabbitmq.listener.simple.retry.*}), see {@code application-rabbit.properties}
 * @param broker {@code kafka} (a Kafka broker JVM, topic {@code orders}) or {@code rabbit} (a
 *     private RabbitMQ node, one quorum queue per consumer)
 * @param deliveryLimit RabbitMQ mode: the quorum queues' {@code x-delivery-limit} (from
 *     {@code sumi.faults.rabbit.delivery-limit}, default {@value #DEFAULT_DELIVERY_LIMIT})
 * @param dispatch how the outbox reaches the broker: {@value #POLLING} (the polling dispatcher),
 *     {@value #CDC} (the CDC path streams the outbox from a replication slot, polling is the
 *     safety net) or {@value #CDC_CONFIRM_FIRST} (the CDC mode's negative control: a CDC path that
 *     confirms each batch before the broker acknowledged it)
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
        String errorHandler,
        boolean brokerRestart,
        String broker,
        int deliveryLimit,
        String dispatch) {

    static final String DEFAULT_ERROR_HANDLER = "none";
    static final String RABBIT_RETRY = "rabbit-retry";
    static final String POLLING = "polling";
    static final String CDC = "cdc";
    static final String CDC_CONFIRM_FIRST = "cdc-confirm-first";

    /**
     * Low, as an operator sets it to get a poison message out of the way within seconds; it is
     * still several times what a message needs here (a kill or a broker restart returns it once).
     */
    static final int DEFAULT_DELIVERY_LIMIT = 5;

    private static int configuredDeliveryLimit() {
        return Integer.getInteger("sumi.faults.rabbit.delivery-limit", DEFAULT_DELIVERY_LIMIT);
    }

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
                Duration.ofMinutes(2),
                seed,
                configuredErrorHandler(),
                false,
                "kafka",
                0,
                POLLING);
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
                Duration.ofMinutes(4),
                seed,
                configuredErrorHandler(),
                false,
                "kafka",
                0,
                POLLING);
    }

    /**
     * The RabbitMQ mode's CI version: 1,800 orders, 3 kills, one PostgreSQL restart, one graceful
     * broker restart.
     */
    public static FaultScenario rabbitShortRun(boolean guard, long seed) {
        return rabbit("short", guard, 600, 20, 3, false, Duration.ofMinutes(2), seed);
    }

    /**
     * The RabbitMQ mode's full version: 12,000 orders, 12 kills, one PostgreSQL restart, one
     * graceful broker restart and one broker crash ({@code kill -9} of the Erlang VM).
     */
    public static FaultScenario rabbitFullRun(boolean guard, long seed) {
        return rabbit("full", guard, 4000, 40, 12, true, Duration.ofMinutes(4), seed);
    }

    private static FaultScenario rabbit(
            String scale,
            boolean guard,
            int ordersPerInstance,
            int rate,
            int kills,
            boolean brokerCrash,
            Duration drainTimeout,
            long seed) {
        return new FaultScenario(
                "rabbit-" + (guard ? "guarded" : "control") + "-" + scale,
                guard,
                3,
                ordersPerInstance,
                rate,
                kills,
                true,
                brokerCrash,
                drainTimeout,
                seed,
                RABBIT_RETRY,
                true,
                "rabbit",
                configuredDeliveryLimit(),
                POLLING);
    }

    /**
     * The CDC mode (Kafka): the instances stream the outbox from the private cluster's replication
     * slot, one at a time, with the polling dispatcher as the safety net; every other kill hits
     * the instance that streams. Its negative control ({@code negativeControl}) keeps Sumi's
     * listeners and replaces the CDC path with one that confirms each batch before the broker's
     * acknowledgement: it must lose orders under the same faults.
     */
    public static FaultScenario cdc(String scale, boolean negativeControl, long seed) {
        record Size(int ordersPerInstance, int rate, int kills, Duration drainTimeout) {}
        Size size = switch (scale) {
            case "short" -> new Size(600, 30, 3, Duration.ofMinutes(2));
            case "full" -> new Size(4000, 40, 12, Duration.ofMinutes(4));
            case "tiny" -> new Size(300, 20, 2, Duration.ofSeconds(90));
            default ->
                throw new IllegalArgumentException("sumi.faults.scale must be short, full or tiny, not " + scale);
        };
        return new FaultScenario(
                "cdc-" + (negativeControl ? "confirm-first" : "guarded") + "-" + scale,
                true,
                3,
                size.ordersPerInstance(),
                size.rate(),
                size.kills(),
                true,
                true,
                size.drainTimeout(),
                seed,
                configuredErrorHandler(),
                false,
                "kafka",
                0,
                negativeControl ? CDC_CONFIRM_FIRST : CDC);
    }

    /**
     * A scenario of the given mode ({@code kafka}, {@code rabbit} or {@code cdc}) and scale;
     * {@code guard=false} is the mode's negative control (for {@code cdc}: Sumi's listeners behind
     * a CDC path that confirms before the ack, see {@link #cdc}).
     */
    public static FaultScenario of(String broker, String scale, boolean guard, long seed) {
        return switch (broker) {
            case "kafka" -> of(scale, guard, seed);
            case "cdc" -> cdc(scale, !guard, seed);
            case "rabbit" ->
                switch (scale) {
                    case "short" -> rabbitShortRun(guard, seed);
                    case "full" -> rabbitFullRun(guard, seed);
                    case "tiny" -> rabbit("tiny", guard, 300, 20, 1, true, Duration.ofSeconds(60), seed);
                    default ->
                        throw new IllegalArgumentException(
                                "sumi.faults.scale must be short, full or tiny, not " + scale);
                };
            default -> throw new IllegalArgumentException("The mode must be kafka, rabbit or cdc, not " + broker);
        };
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
                        configuredErrorHandler(),
                        false,
                        "kafka",
                        0,
                        POLLING);
            default ->
                throw new IllegalArgumentException("sumi.faults.scale must be short, full or tiny, not " + scale);
        };
    }

    boolean rabbit() {
        return broker.equals("rabbit");
    }

    /** Whether the outbox is streamed from the log (the CDC mode and its negative control). */
    public boolean cdc() {
        return !dispatch.equals(POLLING);
    }

    /** Whether this run is a negative control: it must double or lose what the guarded run keeps. */
    public boolean negativeControl() {
        return !guard || dispatch.equals(CDC_CONFIRM_FIRST);
    }

    /**
     * How many messages the driver publishes a second time while the load runs (one order in 50),
     * as the outbox does when a confirm is lost. Both brokers: the negative controls double them
     * whether or not a kill happened to land inside a record's processing (a Kafka control whose
     * one kill fell between records once doubled nothing).
     */
    public int injectedDuplicates() {
        return totalOrders() / 50;
    }

    /** How many broker outages the run has (crashes and graceful restarts). */
    public int brokerFaults() {
        return (brokerKill ? 1 : 0) + (brokerRestart ? 1 : 0);
    }

    int totalOrders() {
        return instances * ordersPerInstance;
    }

    /** How long the load lasts without faults. */
    Duration loadDuration() {
        return Duration.ofMillis(1000L * ordersPerInstance / ratePerInstance);
    }
}
