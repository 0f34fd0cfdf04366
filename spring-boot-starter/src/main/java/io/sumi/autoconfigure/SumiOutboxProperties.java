package io.sumi.autoconfigure;

import io.sumi.outbox.OutboxBackoff;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import org.jspecify.annotations.Nullable;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;

/**
 * Sumi's transactional outbox, under {@code sumi.outbox}. Immutable.
 *
 * @param enabled whether the outbox beans are created at all
 * @param tableName the outbox table, an SQL identifier (optionally schema-qualified)
 * @param dispatcher the dispatcher that sends committed rows
 * @param retention how long dispatched rows are kept before the retention job deletes them
 * @param pruning the retention job
 * @param kafka the Kafka publisher
 * @param metricsRefreshInterval the minimum time between two reads of the table for the backlog
 *     gauges ({@code outbox.pending.total}, {@code outbox.parked}, {@code outbox.oldest.pending.age})
 */
@ConfigurationProperties("sumi.outbox")
public record SumiOutboxProperties(
        @DefaultValue("true") boolean enabled,
        @DefaultValue("outbox") String tableName,
        @DefaultValue Dispatcher dispatcher,
        @DefaultValue("30d") Duration retention,
        @DefaultValue Pruning pruning,
        @DefaultValue Kafka kafka,
        @DefaultValue("10s") Duration metricsRefreshInterval) {

    /**
     * The dispatcher.
     *
     * @param enabled whether this instance runs a dispatcher (turn it off on instances that only
     *     append; any number of instances may dispatch at once)
     * @param batchSize rows claimed, sent and marked per round
     * @param lease how long a claim keeps other dispatchers off its rows, counted by the database's
     *     clock; at least twice {@code send-timeout}
     * @param sendTimeout the bound on sending one batch, counted from the start of its claim: rows
     *     without an acknowledgement by then count a failed attempt; at most half the lease
     * @param minPollInterval the wait after the first empty round (and after a wake-up)
     * @param maxPollInterval the longest wait between polls of an idle outbox (the wait doubles
     *     from the minimum to this while rounds find nothing; a commit on this instance ends it)
     * @param maxAttempts failed sends after which a row is parked until an operator re-drives it
     * @param backoff the wait before a failed row is sent again
     * @param orderedTopics topics whose rows are sent strictly in order per aggregate: a row waits
     *     while an earlier row of its aggregate is undispatched ({@code *}: every topic; empty: none)
     * @param shadowMode whether every row is recorded as dispatched without being sent
     * @param shadowTopics topics in shadow mode ({@code *}: every topic)
     * @param cutoff rows created before this instant (ISO-8601) are recorded as dispatched without
     *     being sent; none by default
     * @param pipelineDepth batches claimed and not yet marked at most: the dispatcher claims the
     *     next batch while earlier ones await their acknowledgements (1: claim, send, mark one after
     *     the other); uses up to depth + 1 database connections
     * @param statisticsCheckInterval how often, at most, the dispatcher checks after a claim that
     *     took a full batch whether the database's planner statistics of the outbox count fewer pending
     *     rows than the claim took, and refreshes them ({@code ANALYZE}) if so (PostgreSQL: with
     *     statistics taken while every row was dispatched, each claim reads every pending row);
     *     {@code 0} never checks
     */
    public record Dispatcher(
            @DefaultValue("true") boolean enabled,
            @DefaultValue("200") int batchSize,
            @DefaultValue("2m") Duration lease,
            @DefaultValue("30s") Duration sendTimeout,
            @DefaultValue("500ms") Duration minPollInterval,
            @DefaultValue("5s") Duration maxPollInterval,
            @DefaultValue("12") int maxAttempts,
            @DefaultValue Backoff backoff,
            @DefaultValue("*") List<String> orderedTopics,
            @DefaultValue("false") boolean shadowMode,
            @DefaultValue List<String> shadowTopics,
            @Nullable Instant cutoff,
            @DefaultValue("2") int pipelineDepth,
            @DefaultValue("10s") Duration statisticsCheckInterval) {}

    /**
     * The wait before a failed row is sent again: {@code initial}, times {@code multiplier} per
     * further failure, capped at {@code max}, shortened by a random part of up to {@code jitter}.
     *
     * @param initial the wait after the first failure
     * @param multiplier the growth per further failure
     * @param max the longest wait
     * @param jitter the largest random reduction, as a fraction (0 to 1)
     */
    public record Backoff(
            @DefaultValue("30s") Duration initial,
            @DefaultValue("2.0") double multiplier,
            @DefaultValue("15m") Duration max,
            @DefaultValue("0.2") double jitter) {

        /** These properties as the dispatcher's backoff. */
        public OutboxBackoff toBackoff() {
            return new OutboxBackoff(initial, multiplier, max, jitter);
        }
    }

    /**
     * The retention job, which deletes dispatched rows older than {@code sumi.outbox.retention}.
     *
     * @param enabled whether this instance runs the job (safe on every instance at once)
     * @param cron when it runs (Spring cron, six fields, the JVM's time zone)
     * @param batchSize rows per delete statement (one short transaction each)
     * @param maxBatches batches per run at most
     */
    public record Pruning(
            @DefaultValue("true") boolean enabled,
            @DefaultValue("0 */10 * * * *") String cron,
            @DefaultValue("1000") int batchSize,
            @DefaultValue("1000") int maxBatches) {}

    /**
     * The Kafka publisher (used when {@code spring-kafka} is on the class path and no other
     * {@code OutboxPublisher} bean exists). Its producer is built from {@code spring.kafka.*}
     * (the application's {@code ProducerFactory} configuration when there is one) and is always
     * idempotent with {@code acks=all}.
     *
     * @param sendTimeout the producer's bound on one batch ({@code max.block.ms} is half of it,
     *     {@code delivery.timeout.ms} all of it); {@code sumi.outbox.dispatcher.send-timeout} when
     *     not set, and never more than that
     */
    public record Kafka(@Nullable Duration sendTimeout) {

        /** The Kafka send timeout, or the dispatcher's when none is set. */
        public Duration sendTimeoutOr(Duration dispatcherSendTimeout) {
            return sendTimeout != null ? sendTimeout : dispatcherSendTimeout;
        }
    }
}
