package io.sumi.test.outbox;

import static io.sumi.test.SumiAssertions.assertThat;

import io.sumi.outbox.OutboxDispatcher;
import io.sumi.outbox.OutboxPublisher;
import io.sumi.outbox.OutboxRecord;
import io.sumi.outbox.OutboxTable;
import io.sumi.outbox.PublishResult;
import io.sumi.test.DeliveryOutcome;
import io.sumi.test.SumiTest;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.LongFunction;
import java.util.stream.Collectors;
import org.awaitility.Awaitility;
import org.jspecify.annotations.Nullable;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * The two outbox contracts every service that writes an outbox should keep in its CI, as checks
 * a test calls with the application's own code. Each fails with an {@link AssertionError} that
 * says what broke the contract. {@link OutboxRollbackContractTests} and
 * {@link OutboxRedeliveryContractTests} run them as JUnit tests.
 */
public final class OutboxContracts {

    /** The application code under test: appends to the outbox, and may throw. */
    @FunctionalInterface
    public interface AppendingCall {
        void run() throws Exception;
    }

    /** Thrown by the publisher after the send, in place of the dispatcher's mark: the dispatcher's JVM "dies". */
    public static final class SimulatedDispatcherCrash extends Error {
        SimulatedDispatcherCrash(Set<Long> ids) {
            super("simulated crash of the outbox dispatcher after sending rows " + ids + " and before marking them");
        }
    }

    private OutboxContracts() {}

    /**
     * Contract 1: a business transaction that rolls back after the append leaves no outbox row.
     * Runs {@code call} in a transaction of {@code transactions} (the call's own
     * {@code @Transactional} joins it), checks that the call appended at least one row (else the
     * contract would prove nothing), then rolls the transaction back and checks that no row of it
     * is left: an append that commits on its own ({@code REQUIRES_NEW}, another DataSource,
     * autocommit) fails here.
     */
    public static void rollbackLeavesNoOutboxRow(
            OutboxTable outbox, PlatformTransactionManager transactions, AppendingCall call) {
        JdbcTemplate jdbc = new JdbcTemplate(outbox.dataSource());
        long before = maxId(jdbc, outbox);
        TransactionTemplate transaction = new TransactionTemplate(transactions);
        long appended = transaction.execute(status -> {
            try {
                call.run();
            } catch (RuntimeException ex) {
                throw ex;
            } catch (Exception ex) {
                throw new IllegalStateException("The appending call failed: " + ex.getMessage(), ex);
            }
            long rows = rowsAfter(jdbc, outbox, before);
            status.setRollbackOnly();
            return rows;
        });
        if (appended == 0) {
            throw new AssertionError("The call appended no outbox row (table " + outbox.tableName()
                    + "), so its rollback proves nothing: point the contract at code that calls Outbox.append");
        }
        long left = rowsAfter(jdbc, outbox, before);
        if (left > 0) {
            throw new AssertionError(left + " outbox row(s) survived the rollback of the business transaction: the"
                    + " append did not take part in it (REQUIRES_NEW, an outbox on another DataSource or transaction"
                    + " manager, or a write in autocommit). A mail or charge would go out for business data that"
                    + " was never committed.");
        }
    }

    /**
     * Contract 1 along the application's own failure path: {@code call} appends and then fails
     * (a write the database refuses, a check that throws), and leaves no outbox row behind.
     *
     * @return what the call threw, for further assertions
     */
    public static Throwable failingCallLeavesNoOutboxRow(OutboxTable outbox, AppendingCall call) {
        JdbcTemplate jdbc = new JdbcTemplate(outbox.dataSource());
        long before = maxId(jdbc, outbox);
        Throwable failure = null;
        try {
            call.run();
        } catch (Exception ex) {
            failure = ex;
        }
        if (failure == null) {
            throw new AssertionError("The call was expected to fail after its append, but it returned");
        }
        long left = rowsAfter(jdbc, outbox, before);
        if (left > 0) {
            throw new AssertionError(left + " outbox row(s) survived the failed call (" + failure + "): the append"
                    + " did not take part in the business transaction that rolled back");
        }
        return failure;
    }

    /**
     * The control of contract 1: {@code call} appends at least one row when its transaction
     * commits. Returns the ids of the rows it appended.
     */
    public static List<Long> commitAppendsARow(OutboxTable outbox, AppendingCall call) {
        JdbcTemplate jdbc = new JdbcTemplate(outbox.dataSource());
        long before = maxId(jdbc, outbox);
        try {
            call.run();
        } catch (Exception ex) {
            throw new AssertionError("The appending call failed: " + ex, ex);
        }
        List<Long> ids = jdbc.queryForList(
                "SELECT id FROM " + outbox.tableName() + " WHERE id > ? ORDER BY id", Long.class, before);
        if (ids.isEmpty()) {
            throw new AssertionError("The call committed no outbox row (table " + outbox.tableName() + ")");
        }
        return ids;
    }

    /**
     * Contract 2: a dispatcher that dies after the send but before the mark sends again, and the
     * consumer deduplicates.
     *
     * <ol>
     *   <li>The application's own dispatcher, if it runs, is stopped for the check (and started
     *   again after), so that the rows go only where the check sends them.</li>
     *   <li>{@code call} commits its rows. A dispatcher of the check's own, on the application's
     *   table and publisher with a lease of {@code lease}, claims and sends them; its publisher
     *   then "dies" ({@link SimulatedDispatcherCrash}) before the rows are marked.</li>
     *   <li>The rows are still pending, and the consumer receives the first copies. When the
     *   lease ends, the next round sends the rows again and marks them.</li>
     *   <li>The consumer settles both copies of every row and ran its handler once per row: its
     *   key (the {@code outbox-id}, {@code keyOf} for another key) is processed once and the
     *   second copy is a duplicate.</li>
     * </ol>
     *
     * @param consumer the consumer's name for the kit (its ledger namespace, or consumer group)
     * @param appDispatcher the application's dispatcher, or null if it has none
     */
    public static void redeliveryIsDeduplicated(
            SumiTest sumi,
            OutboxTable outbox,
            OutboxPublisher publisher,
            @Nullable OutboxDispatcher appDispatcher,
            AppendingCall call,
            String consumer,
            LongFunction<String> keyOf,
            Duration lease) {
        boolean restart = appDispatcher != null && appDispatcher.isRunning();
        if (appDispatcher != null) {
            appDispatcher.stop(Duration.ofSeconds(30));
        }
        try {
            List<Long> ids = commitAppendsARow(outbox, call);
            Set<Long> ours = Set.copyOf(ids);
            CrashingPublisher crashing = new CrashingPublisher(publisher, ours);
            try (OutboxDispatcher dispatcher = OutboxDispatcher.builder(outbox, crashing)
                    .lease(lease)
                    .sendTimeout(lease.dividedBy(2))
                    .build()) {
                Awaitility.await("the first send of outbox rows " + ids)
                        .atMost(lease.multipliedBy(5).plusSeconds(10))
                        .pollInterval(Duration.ofMillis(20))
                        .until(() -> {
                            try {
                                dispatcher.dispatchOnce();
                            } catch (SimulatedDispatcherCrash crash) {
                                // The dispatcher "died" after the send.
                            }
                            return crashing.crashed();
                        });
                for (long id : ids) {
                    if (!outbox.find(id).map(OutboxRecord::pending).orElse(false)) {
                        throw new AssertionError("Outbox row " + id + " is not pending after the dispatcher died before"
                                + " marking it: it would never be sent again");
                    }
                }
                List<String> keys = ids.stream().map(keyOf::apply).toList();
                Awaitility.await("the consumer " + consumer + " receiving the first copies of " + keys)
                        .atMost(Duration.ofSeconds(30))
                        .pollInterval(Duration.ofMillis(50))
                        .until(() -> keys.stream().allMatch(key -> settled(sumi, consumer, key, 1)));
                Awaitility.await("the second send of outbox rows " + ids + " after the dead dispatcher's lease")
                        .atMost(lease.multipliedBy(5).plusSeconds(10))
                        .pollInterval(Duration.ofMillis(100))
                        .until(() -> {
                            dispatcher.dispatchOnce();
                            return ids.stream()
                                    .noneMatch(id -> outbox.find(id)
                                            .map(OutboxRecord::pending)
                                            .orElse(true));
                        });
                if (crashing.sends() < 2) {
                    throw new AssertionError("The rows were sent " + crashing.sends() + " time(s), expected twice");
                }
                Awaitility.await("the consumer " + consumer + " settling both copies of " + keys)
                        .atMost(Duration.ofSeconds(30))
                        .pollInterval(Duration.ofMillis(50))
                        .until(() -> keys.stream().allMatch(key -> settled(sumi, consumer, key, 2)));
                for (String key : keys) {
                    assertThat(sumi)
                            .consumer(consumer)
                            .processedOnce(key)
                            .hasOutcome(key, DeliveryOutcome.DUPLICATE, 1);
                }
            }
        } finally {
            if (restart && appDispatcher != null) {
                appDispatcher.start();
            }
        }
    }

    private static boolean settled(SumiTest sumi, String consumer, String key, int copies) {
        return sumi.acknowledged(consumer, key) >= copies;
    }

    private static long maxId(JdbcTemplate jdbc, OutboxTable outbox) {
        Long max = jdbc.queryForObject("SELECT MAX(id) FROM " + outbox.tableName(), Long.class);
        return max == null ? 0 : max;
    }

    private static long rowsAfter(JdbcTemplate jdbc, OutboxTable outbox, long id) {
        Long rows = jdbc.queryForObject("SELECT COUNT(*) FROM " + outbox.tableName() + " WHERE id > ?", Long.class, id);
        return rows == null ? 0 : rows;
    }

    /** The application's publisher; after the first batch with one of {@code ours} is sent, it "dies" once. */
    private static final class CrashingPublisher implements OutboxPublisher {
        private final OutboxPublisher delegate;
        private final Set<Long> ours;
        // Atomic: a pipelined dispatcher publishes batches from several threads at once, and exactly
        // one of them may crash.
        private final AtomicBoolean crashed = new AtomicBoolean();
        private final AtomicInteger sends = new AtomicInteger();

        CrashingPublisher(OutboxPublisher delegate, Set<Long> ours) {
            this.delegate = delegate;
            this.ours = ours;
        }

        boolean crashed() {
            return crashed.get();
        }

        int sends() {
            return sends.get();
        }

        @Override
        public PublishResult publish(List<OutboxRecord> records) {
            return crashAfter(records, delegate.publish(records));
        }

        @Override
        public PublishResult publish(List<OutboxRecord> records, Duration timeout) {
            return crashAfter(records, delegate.publish(records, timeout));
        }

        private PublishResult crashAfter(List<OutboxRecord> records, PublishResult result) {
            Set<Long> sent = records.stream()
                    .map(OutboxRecord::id)
                    .filter(ours::contains)
                    .filter(result::sent)
                    .collect(Collectors.toSet());
            if (!sent.isEmpty()) {
                sends.incrementAndGet();
                if (crashed.compareAndSet(false, true)) {
                    throw new SimulatedDispatcherCrash(sent);
                }
            }
            return result;
        }
    }
}
