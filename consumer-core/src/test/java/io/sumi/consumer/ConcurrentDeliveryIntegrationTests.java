package io.sumi.consumer;

import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.sumi.consumer.exception.MessageBusyException;
import io.sumi.store.jdbc.JdbcProcessedMessageStore;
import io.sumi.testing.TestDatabase;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Deque;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.IntStream;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.Parameter;
import org.junit.jupiter.params.ParameterizedClass;
import org.junit.jupiter.params.provider.EnumSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.dao.PessimisticLockingFailureException;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;

/**
 * Eight consumers receive the same 2,000 messages at the same time, each in its own order, on a
 * real database, with real threads: every message's effect must happen exactly once. A consumer
 * that is told to try a message later (a live claim elsewhere, or in transactional mode a deadlock
 * or serialization failure, after which the broker would redeliver) puts it back at the end of its
 * own queue. Run on each database: the class is parameterized by it.
 */
@ParameterizedClass
@EnumSource(
        value = TestDatabase.class,
        names = {"POSTGRESQL", "MARIADB"})
class ConcurrentDeliveryIntegrationTests {

    static final int CONSUMERS = 8;
    static final int KEYS = 2_000;

    /** Keys per window of the consumers' shuffled orders (see {@link #shuffledInWindows}). */
    static final int WINDOW = 16;

    /** A consumer that retried this often without finishing is stuck, not slow. */
    static final int MAX_DELIVERIES_PER_CONSUMER = 50 * KEYS;

    private static final Logger log = LoggerFactory.getLogger(ConcurrentDeliveryIntegrationTests.class);

    private final SimpleMeterRegistry meters = new SimpleMeterRegistry();
    private final AtomicInteger busy = new AtomicInteger();
    private final AtomicInteger lockFailures = new AtomicInteger();
    private final AtomicInteger processed = new AtomicInteger();
    private final AtomicInteger duplicates = new AtomicInteger();
    private final Map<String, AtomicInteger> inFlight = new ConcurrentHashMap<>();
    private final AtomicInteger overlapping = new AtomicInteger();
    /**
     * The one race forced rather than hoped for: the first run of this key's effect waits until
     * another consumer's delivery of the same key is in flight (which then meets the live claim or,
     * in transactional mode, the uncommitted ledger row). The other keys race as they happen to.
     */
    private static final String RACED_KEY = "message-0";

    private final CountDownLatch racedKeyOverlapped = new CountDownLatch(1);
    private final AtomicBoolean racedKeyHeld = new AtomicBoolean();
    private DataSource dataSource;
    private JdbcTemplate jdbc;
    private IdempotentExecutor executor;
    private String consumer;
    private String effects;

    /** The database, the class's parameter: each test runs on every database the source above names. */
    @Parameter
    TestDatabase database;

    @BeforeEach
    void setUp() {
        dataSource = database.dataSource();
        jdbc = new JdbcTemplate(dataSource);
        consumer = "concurrency-" + UUID.randomUUID();
        // No key and no unique constraint: a message whose effect commits twice shows as two rows.
        effects = "sumi_test_effects_" + UUID.randomUUID().toString().substring(0, 8);
        jdbc.execute("CREATE TABLE " + effects + " (message_id VARCHAR(200) NOT NULL, worker INT NOT NULL)");
        JdbcProcessedMessageStore store =
                JdbcProcessedMessageStore.builder(dataSource).build();
        executor = IdempotentExecutor.builder(store)
                .transactionSupport(TransactionSupport.of(new DataSourceTransactionManager(dataSource)))
                .meterRegistry(meters)
                .build();
    }

    @AfterEach
    void cleanUp() {
        jdbc.update("DELETE FROM processed_messages WHERE consumer = ?", consumer);
        jdbc.execute("DROP TABLE " + effects);
    }

    @Test
    void leaseModeRunsEachMessageOnceWhenEightConsumersReceiveItAtOnce() throws Exception {
        AtomicInteger invocations = new AtomicInteger();
        Map<String, AtomicInteger> perKey = new ConcurrentHashMap<>();
        HandlerDefinition handler = HandlerDefinition.builder(consumer)
                .mode(IdempotencyMode.LEASE)
                .lease(Duration.ofMinutes(2))
                .build();

        deliverConcurrently(handler, (key, worker) -> {
            invocations.incrementAndGet();
            perKey.computeIfAbsent(key, k -> new AtomicInteger()).incrementAndGet();
        });

        assertThat(invocations).hasValue(KEYS);
        assertThat(perKey).hasSize(KEYS);
        assertThat(perKey.entrySet())
                .filteredOn(entry -> entry.getValue().get() != 1)
                .isEmpty();
        assertOutcomes();
    }

    @Test
    void transactionalModeCommitsEachMessagesEffectOnceWhenEightConsumersReceiveItAtOnce() throws Exception {
        HandlerDefinition handler = HandlerDefinition.builder(consumer)
                .mode(IdempotencyMode.TRANSACTIONAL)
                .build();

        deliverConcurrently(
                handler,
                (key, worker) ->
                        jdbc.update("INSERT INTO " + effects + " (message_id, worker) VALUES (?, ?)", key, worker));

        assertThat(jdbc.queryForObject("SELECT COUNT(*) FROM " + effects, Integer.class))
                .isEqualTo(KEYS);
        assertThat(jdbc.queryForObject("SELECT COUNT(DISTINCT message_id) FROM " + effects, Integer.class))
                .isEqualTo(KEYS);
        assertThat(jdbc.queryForList(
                        "SELECT message_id FROM " + effects + " GROUP BY message_id HAVING COUNT(*) > 1", String.class))
                .isEmpty();
        assertOutcomes();
    }

    @FunctionalInterface
    interface Effect {
        void apply(String key, int worker) throws Exception;
    }

    private void deliverConcurrently(HandlerDefinition handler, Effect effect) throws Exception {
        List<String> keys =
                IntStream.range(0, KEYS).mapToObj(i -> "message-" + i).toList();
        long seed = new Random().nextLong();
        CountDownLatch start = new CountDownLatch(1);
        ExecutorService pool = Executors.newFixedThreadPool(CONSUMERS);
        long began = System.nanoTime();
        try {
            List<Future<?>> consumers = new ArrayList<>();
            for (int w = 0; w < CONSUMERS; w++) {
                int worker = w;
                List<String> order = shuffledInWindows(keys, new Random(seed + worker));
                consumers.add(pool.submit(() -> {
                    start.await();
                    consume(handler, worker, new ArrayDeque<>(order), effect);
                    return null;
                }));
            }
            start.countDown();
            for (Future<?> future : consumers) {
                future.get(120, TimeUnit.SECONDS);
            }
        } finally {
            pool.shutdownNow();
            log.info(
                    "{} {}: {} consumers x {} keys in {} ms (seed {}): {} deliveries overlapped another of the same key,"
                            + " {} busy, {} deadlocks/serialization failures redelivered",
                    database,
                    handler.mode(),
                    CONSUMERS,
                    KEYS,
                    TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - began),
                    seed,
                    overlapping.get(),
                    busy.get(),
                    lockFailures.get());
        }
        assertThat(overlapping)
                .as("deliveries of one key that raced each other (else this test proves nothing)")
                .hasPositiveValue();
        assertThat(racedKeyOverlapped.getCount())
                .as("a second delivery of " + RACED_KEY + " arrived while its first ran")
                .isZero();
    }

    /**
     * The keys in an order of this consumer's own: shuffled within consecutive windows of
     * {@value #WINDOW} keys. With a full shuffle the consumers would meet on a key only by chance
     * and the races this test is about would hardly happen; within windows, all eight deliver the
     * same few keys at the same moment, as they do when a broker redelivers a batch to a group.
     */
    private static List<String> shuffledInWindows(List<String> keys, Random random) {
        List<String> order = new ArrayList<>(keys.size());
        for (int from = 0; from < keys.size(); from += WINDOW) {
            List<String> window = new ArrayList<>(keys.subList(from, Math.min(from + WINDOW, keys.size())));
            Collections.shuffle(window, random);
            order.addAll(window);
        }
        return order;
    }

    private void consume(HandlerDefinition handler, int worker, Deque<String> queue, Effect effect) throws Exception {
        int deliveries = 0;
        while (!queue.isEmpty()) {
            if (++deliveries > MAX_DELIVERIES_PER_CONSUMER) {
                throw new AssertionError("consumer " + worker + " made " + deliveries + " deliveries and still has "
                        + queue.size() + " messages, e.g. " + queue.peekFirst());
            }
            String key = queue.pollFirst();
            AtomicInteger deliveriesOfKey = inFlight.computeIfAbsent(key, k -> new AtomicInteger());
            if (deliveriesOfKey.incrementAndGet() > 1) {
                overlapping.incrementAndGet();
                if (key.equals(RACED_KEY)) {
                    racedKeyOverlapped.countDown();
                }
            }
            try {
                HandlerResult<Void> result = executor.execute(handler, H2ExecutorTestSupport.message(key), () -> {
                    if (key.equals(RACED_KEY) && racedKeyHeld.compareAndSet(false, true)) {
                        // Bounded: if no other delivery comes, the assertion below fails the test.
                        racedKeyOverlapped.await(30, TimeUnit.SECONDS);
                    }
                    effect.apply(key, worker);
                    return null;
                });
                (result.outcome() == MessageOutcome.PROCESSED ? processed : duplicates).incrementAndGet();
            } catch (MessageBusyException ex) {
                busy.incrementAndGet();
                queue.addLast(key);
                Thread.yield();
            } catch (RuntimeException ex) {
                if (handler.mode() != IdempotencyMode.TRANSACTIONAL || !isLockFailure(ex)) {
                    throw ex;
                }
                lockFailures.incrementAndGet();
                queue.addLast(key);
            } finally {
                deliveriesOfKey.decrementAndGet();
            }
        }
    }

    /** A deadlock or serialization failure: the transaction was rolled back and may simply run again. */
    private static boolean isLockFailure(Throwable ex) {
        for (Throwable t = ex; t != null; t = t.getCause()) {
            if (t instanceof PessimisticLockingFailureException) {
                return true;
            }
            if (t instanceof SQLException sql
                    && ("40001".equals(sql.getSQLState())
                            || "40P01".equals(sql.getSQLState())
                            || sql.getErrorCode() == 1213)) {
                return true;
            }
        }
        return false;
    }

    private void assertOutcomes() {
        assertThat(processed).as("deliveries that ran the handler").hasValue(KEYS);
        assertThat(duplicates).as("every other delivery ended as a duplicate").hasValue(CONSUMERS * KEYS - KEYS);
        assertThat(count("processed")).isEqualTo(KEYS);
        assertThat(count("duplicate")).isEqualTo(CONSUMERS * KEYS - KEYS);
        assertThat(count("busy")).isEqualTo(busy.get());
        assertThat(jdbc.queryForObject(
                        "SELECT COUNT(*) FROM processed_messages WHERE consumer = ? AND status = 'COMPLETED'",
                        Integer.class,
                        consumer))
                .isEqualTo(KEYS);
        assertThat(jdbc.queryForObject(
                        "SELECT COUNT(*) FROM processed_messages WHERE consumer = ?", Integer.class, consumer))
                .isEqualTo(KEYS);
        assertThat(meters.find("sumi.leases.lost").counters())
                .allSatisfy(counter -> assertThat(counter.count()).isZero());
    }

    private double count(String outcome) {
        Counter counter = meters.find("sumi.messages")
                .tag("consumer", consumer)
                .tag("outcome", outcome)
                .counter();
        return counter == null ? 0 : counter.count();
    }
}
