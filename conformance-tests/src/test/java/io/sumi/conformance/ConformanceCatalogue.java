package io.sumi.conformance;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.sumi.conformance.report.CatalogueResults;
import io.sumi.conformance.report.CatalogueResults.State;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.awaitility.core.ConditionTimeoutException;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;
import org.junit.jupiter.api.function.Executable;

/**
 * The catalogue, run against one {@link ListenerKind}: a subclass per kind gives the driver (and its
 * Spring context, shared by all its scenarios). One dynamic test per scenario that applies; a
 * scenario that does not apply has no test, its reason goes to the table.
 *
 * <p>Every scenario asserts the promise (docs/guarantees.md says which), not the behaviour of the
 * day: a scenario that fails names a defect.
 */
public abstract class ConformanceCatalogue {

    /** How long a scenario waits for what it expects before it fails. */
    static final Duration PATIENCE = Duration.ofSeconds(30);

    /** The lease the dead instance of {@link Scenario#HELD_BY_DEAD_INSTANCE} left. */
    static final Duration DEAD_LEASE = Duration.ofSeconds(8);

    /**
     * Scenarios not written yet, for every kind: in the table as "not written", so the gap shows.
     */
    static final Map<Scenario, String> NOT_WRITTEN = Map.of();

    /** Why {@link Scenario#ASYNC_FAILED_FUTURE} does not apply to a batch kind. */
    protected static final String NO_ASYNC_BATCH = "Sumi refuses an asynchronous batch listener at start-up, naming"
            + " the listener and the fix (ListenerReturnTypes.check, from the method and from the container:"
            + " AsyncBatchListenerStartUpTests, docs/consumer-semantics.md, \"Asynchronous handlers\"): a batch's"
            + " rows complete when the method returns, and no container waits for a batch's future";

    protected abstract ListenerKind kind();

    @TestFactory
    Stream<DynamicTest> catalogue() {
        ListenerKind kind = kind();
        Map<Scenario, String> notApplicable = kind.notApplicable();
        List<DynamicTest> tests = new ArrayList<>();
        for (Scenario scenario : Scenario.values()) {
            if (notApplicable.containsKey(scenario)) {
                CatalogueResults.record(kind.id(), scenario, State.NOT_APPLICABLE, notApplicable.get(scenario));
            } else if (NOT_WRITTEN.containsKey(scenario)
                    || (kind.notWritten().containsKey(scenario) && !runsKnownDefect(kind, scenario))) {
                CatalogueResults.record(
                        kind.id(),
                        scenario,
                        State.NOT_WRITTEN,
                        NOT_WRITTEN.getOrDefault(scenario, kind.notWritten().get(scenario)));
            } else if (body(scenario, kind) == null) {
                // A scenario added to the enum before its steps: a gap in every column, not a broken build.
                CatalogueResults.record(kind.id(), scenario, State.NOT_WRITTEN, "no steps in the catalogue yet");
            } else {
                Executable body = body(scenario, kind);
                tests.add(DynamicTest.dynamicTest(scenario.name(), () -> {
                    try {
                        body.execute();
                        CatalogueResults.record(kind.id(), scenario, State.PASS, null);
                    } catch (Throwable failure) {
                        CatalogueResults.record(kind.id(), scenario, State.FAIL, String.valueOf(failure.getMessage()));
                        throw failure;
                    }
                }));
            }
        }
        return tests.stream();
    }

    /**
     * A cell reported as a gap because it fails on a known defect (its reason starts with
     * {@link #DEFECT}) runs anyway with {@code -Dsumi.conformance.run-defects=true}: its test, kept
     * out of CI until the fix, is there to be seen failing and then passing.
     */
    private static boolean runsKnownDefect(ListenerKind kind, Scenario scenario) {
        return Boolean.getBoolean("sumi.conformance.run-defects")
                && kind.notWritten().get(scenario).startsWith(DEFECT);
    }

    /** How a {@link ListenerKind#notWritten()} reason names a defect the cell's test shows. */
    public static final String DEFECT = "defect: ";

    private @Nullable Executable body(Scenario scenario, ListenerKind kind) {
        Map<Scenario, Executable> bodies = new EnumMap<>(Scenario.class);
        bodies.put(Scenario.CONCURRENT_DUPLICATES, () -> concurrentDuplicates(kind));
        bodies.put(Scenario.CONCURRENT_DUPLICATES_CONTROL, () -> concurrentDuplicatesControl(kind));
        bodies.put(Scenario.HELD_BY_DEAD_INSTANCE, () -> heldByDeadInstance(kind));
        bodies.put(Scenario.HELD_BY_DEAD_INSTANCE_CONTROL, () -> heldByDeadInstanceControl(kind));
        bodies.put(Scenario.FAILURE_THEN_SUCCESS, () -> failureThenSuccess(kind));
        bodies.put(Scenario.FAILURE_AFTER_EFFECT, () -> failureAfterEffect(kind));
        bodies.put(Scenario.KEYLESS_ALONE, () -> badKeyAlone(kind, null));
        bodies.put(Scenario.INVALID_KEY_ALONE, () -> badKeyAlone(kind, "k".repeat(201)));
        bodies.put(Scenario.BAD_KEYS_IN_BATCH, () -> badKeysInBatch(kind));
        bodies.put(Scenario.TRANSACTIONAL_JDBC, () -> transactionalJdbc(kind));
        bodies.put(Scenario.TRANSACTIONAL_JDBC_CONTROL, () -> transactionalJdbcControl(kind));
        bodies.put(Scenario.BAD_KEY_TRANSACTED_CONTAINER, () -> badKeyTransactedContainer(kind));
        bodies.put(Scenario.MANUAL_ACK, () -> manualAck(kind));
        bodies.put(Scenario.MANUAL_NACK, () -> manualNegative(kind, false));
        bodies.put(Scenario.MANUAL_REJECT, () -> manualNegative(kind, true));
        bodies.put(Scenario.MANUAL_MULTIPLE, () -> manualMultiple(kind));
        bodies.put(Scenario.ASYNC_FAILED_FUTURE, () -> asyncFailedFuture(kind, Role.ASYNC));
        bodies.put(Scenario.ASYNC_FAILED_FUTURE_CONTROL, () -> asyncFailedFuture(kind, Role.PLAIN_ASYNC));
        bodies.put(Scenario.LEDGER_DOWN_DURING_CLAIM, () -> LedgerDownScenarios.duringClaim(kind));
        bodies.put(Scenario.LEDGER_DOWN_DURING_COMPLETION, () -> LedgerDownScenarios.duringCompletion(kind));
        bodies.put(Scenario.LEDGER_DOWN_DURING_COMMIT, () -> LedgerDownScenarios.duringCommit(kind));
        bodies.put(Scenario.LEDGER_DOWN_DURING_SHUTDOWN, () -> LedgerDownScenarios.duringShutdown(kind));
        bodies.put(Scenario.STOP_RESTART_MID_BATCH, () -> stopRestartMidBatch(kind));
        bodies.put(Scenario.BUDGET_OPEN_THEN_CLOSED, () -> budgetOpenThenClosed(kind));
        return bodies.get(scenario);
    }

    // ------------------------------------------------------------------ scenarios

    /**
     * Waits for {@code condition}; on a timeout fails with what the scenario saw (runs, effects, dead
     * letters and their reasons, the ledger row), so the table's failure says why.
     */
    static void waitFor(
            String what,
            Duration atMost,
            ListenerKind kind,
            Role role,
            String payload,
            @Nullable String key,
            Callable<Boolean> condition) {
        try {
            await(what).atMost(atMost).until(condition);
        } catch (ConditionTimeoutException timeout) {
            Work work = kind.work();
            throw new AssertionError(
                    "timed out after " + atMost.toSeconds() + " s waiting for: " + what
                            + "; runs " + work.calls(payload) + ", effects " + work.effects(payload)
                            + ", dead letters " + work.deadLetters(payload) + " " + work.deadLetterReasons(payload)
                            + ", ledger row "
                            + (key == null ? "-" : new Ledger(kind.dataSource()).row(kind.consumer(role), key)),
                    timeout);
        }
    }

    static String unique(String what) {
        return what + "-" + UUID.randomUUID();
    }

    private static void concurrentDuplicates(ListenerKind kind) throws Exception {
        Work work = kind.work();
        Ledger ledger = new Ledger(kind.dataSource());
        String key = unique("dup");
        String payload = unique("dup-payload");
        Work.Script script = work.script(payload).hold();
        double busyBefore = kind.outcomes(Role.LEASE, "busy");
        double duplicatesBefore = kind.outcomes(Role.LEASE, "duplicate");
        kind.send(Role.LEASE, List.of(new Outgoing(payload, key, 0)));
        assertThat(script.awaitEntered()).as("the first copy's handler started").isTrue();
        kind.send(Role.LEASE, List.of(new Outgoing(payload, key, 1)));
        try {
            waitFor(
                    "the second copy refused as busy while the first runs",
                    PATIENCE,
                    kind,
                    Role.LEASE,
                    payload,
                    key,
                    () -> kind.outcomes(Role.LEASE, "busy") > busyBefore);
        } finally {
            script.release();
        }
        waitFor(
                "the row COMPLETED and the second copy skipped as a duplicate",
                PATIENCE,
                kind,
                Role.LEASE,
                payload,
                key,
                () -> "COMPLETED".equals(ledger.status(kind.consumer(Role.LEASE), key))
                        && kind.outcomes(Role.LEASE, "duplicate") > duplicatesBefore);
        assertThat(work.effects(payload)).as("effects of two concurrent copies").hasSize(1);
        assertThat(work.deadLetters(payload)).as("dead letters").isZero();
    }

    private static void concurrentDuplicatesControl(ListenerKind kind) throws Exception {
        Work work = kind.work();
        String key = unique("dup");
        String payload = unique("dup-payload");
        Work.Script script = work.script(payload).hold();
        kind.send(Role.PLAIN, List.of(new Outgoing(payload, key, 0)));
        assertThat(script.awaitEntered()).as("the first copy's handler started").isTrue();
        kind.send(Role.PLAIN, List.of(new Outgoing(payload, key, 1)));
        try {
            waitFor(
                    "the second copy's handler running beside the first",
                    PATIENCE,
                    kind,
                    Role.PLAIN,
                    payload,
                    key,
                    () -> work.calls(payload) == 2);
        } finally {
            script.release();
        }
        waitFor(
                "both effects",
                PATIENCE,
                kind,
                Role.PLAIN,
                payload,
                key,
                () -> work.effects(payload).size() == 2);
        assertThat(work.effects(payload))
                .as("a plain listener runs both copies")
                .hasSize(2);
    }

    private static void heldByDeadInstance(ListenerKind kind) throws Exception {
        Work work = kind.work();
        Ledger ledger = new Ledger(kind.dataSource());
        String key = unique("held");
        String payload = unique("held-payload");
        ledger.holdAsDeadInstance(kind.consumer(Role.HELD), key, DEAD_LEASE);
        kind.send(Role.HELD, List.of(new Outgoing(payload, key)));
        waitFor(
                "the held message run once its holder's lease ended (or given up: dead-lettered)",
                PATIENCE.plus(DEAD_LEASE),
                kind,
                Role.HELD,
                payload,
                key,
                () -> !work.effects(payload).isEmpty() || work.deadLetters(payload) > 0);
        assertThat(work.deadLetters(payload))
                .as(
                        "dead letters of a message whose key a dead instance held; ledger row %s",
                        ledger.row(kind.consumer(Role.HELD), key))
                .isZero();
        waitFor(
                "the row COMPLETED",
                PATIENCE,
                kind,
                Role.HELD,
                payload,
                key,
                () -> "COMPLETED".equals(ledger.status(kind.consumer(Role.HELD), key)));
        assertThat(work.effects(payload)).as("effects").hasSize(1);
    }

    private static void heldByDeadInstanceControl(ListenerKind kind) throws Exception {
        Work work = kind.work();
        String payload = unique("held-control");
        work.script(payload).failBefore(Integer.MAX_VALUE);
        kind.send(Role.PLAIN_HELD, List.of(new Outgoing(payload, unique("held"))));
        waitFor(
                "the broker's limit dead-letters a message refused on every delivery",
                PATIENCE,
                kind,
                Role.PLAIN_HELD,
                payload,
                null,
                () -> work.deadLetters(payload) > 0);
        assertThat(work.effects(payload)).isEmpty();
    }

    private static void failureThenSuccess(ListenerKind kind) throws Exception {
        Work work = kind.work();
        Ledger ledger = new Ledger(kind.dataSource());
        String key = unique("fail");
        String payload = unique("fail-payload");
        work.script(payload).failBefore(2);
        kind.send(Role.LEASE, List.of(new Outgoing(payload, key)));
        waitFor(
                "the third run succeeded and the row COMPLETED",
                PATIENCE,
                kind,
                Role.LEASE,
                payload,
                key,
                () -> "COMPLETED".equals(ledger.status(kind.consumer(Role.LEASE), key))
                        || work.deadLetters(payload) > 0);
        assertThat(work.deadLetters(payload)).as("dead letters").isZero();
        assertThat(work.effects(payload)).as("effects").hasSize(1);
        assertThat(work.calls(payload)).as("runs").isEqualTo(3);
    }

    private static void failureAfterEffect(ListenerKind kind) throws Exception {
        Work work = kind.work();
        Ledger ledger = new Ledger(kind.dataSource());
        String key = unique("after");
        String payload = unique("after-payload");
        work.script(payload).failAfterEffect(1);
        kind.send(Role.LEASE, List.of(new Outgoing(payload, key)));
        waitFor(
                "the redelivery ran again and the row COMPLETED",
                PATIENCE,
                kind,
                Role.LEASE,
                payload,
                key,
                () -> "COMPLETED".equals(ledger.status(kind.consumer(Role.LEASE), key))
                        || work.deadLetters(payload) > 0);
        assertThat(work.deadLetters(payload)).as("dead letters").isZero();
        assertThat(work.effects(payload))
                .as("the effect is repeated, with the same key, after a failure before completion")
                .containsExactly(new Work.Effect(key), new Work.Effect(key));
    }

    private static void badKeyAlone(ListenerKind kind, @Nullable String badKey) throws Exception {
        Work work = kind.work();
        Ledger ledger = new Ledger(kind.dataSource());
        String payload = unique("bad-key");
        String key = badKey == null ? null : badKey + payload;
        kind.send(Role.LEASE, List.of(new Outgoing(payload, key)));
        waitFor(
                "the message dead-lettered",
                PATIENCE,
                kind,
                Role.LEASE,
                payload,
                key,
                () -> work.deadLetters(payload) > 0);
        assertThat(work.calls(payload))
                .as("runs of a message without a usable key")
                .isZero();
        if (key != null) {
            assertThat(ledger.status(kind.consumer(Role.LEASE), key)).isNull();
        }
    }

    private static void badKeysInBatch(ListenerKind kind) throws Exception {
        Work work = kind.work();
        Ledger ledger = new Ledger(kind.dataSource());
        List<Outgoing> batch = new ArrayList<>();
        List<Outgoing> good = new ArrayList<>();
        List<String> bad = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            String payload = unique("batch-" + i);
            Outgoing message;
            if (i == 1) {
                message = new Outgoing(payload, null);
                bad.add(payload);
            } else if (i == 3) {
                message = new Outgoing(payload, "k".repeat(201) + payload);
                bad.add(payload);
            } else {
                message = new Outgoing(payload, unique("batch-key"));
                good.add(message);
            }
            batch.add(message);
        }
        kind.send(Role.LEASE, batch);
        waitFor(
                "the good messages COMPLETED and the bad ones dead-lettered",
                PATIENCE,
                kind,
                Role.LEASE,
                bad.get(0),
                null,
                () -> good.stream().allMatch(m -> "COMPLETED".equals(ledger.status(kind.consumer(Role.LEASE), m.key())))
                        && bad.stream().allMatch(p -> work.deadLetters(p) > 0));
        for (Outgoing message : good) {
            assertThat(work.effects(message.payload()))
                    .as("effects of %s", message.payload())
                    .hasSize(1);
            assertThat(work.deadLetters(message.payload()))
                    .as("dead letters of a good message")
                    .isZero();
        }
        for (String payload : bad) {
            assertThat(work.calls(payload)).as("runs of a bad message").isZero();
        }
    }

    private static void transactionalJdbc(ListenerKind kind) throws Exception {
        Work work = kind.work();
        Ledger ledger = new Ledger(kind.dataSource());
        String key = unique("tx");
        String payload = unique("tx-payload");
        work.script(payload).failAfterEffect(1);
        kind.send(Role.TX, List.of(new Outgoing(payload, key)));
        waitFor(
                "the redelivery committed",
                PATIENCE,
                kind,
                Role.TX,
                payload,
                key,
                () -> "COMPLETED".equals(ledger.status(kind.consumer(Role.TX), key)) || work.deadLetters(payload) > 0);
        double duplicatesBefore = kind.outcomes(Role.TX, "duplicate");
        kind.send(Role.TX, List.of(new Outgoing(payload, key)));
        waitFor(
                "the second copy skipped as a duplicate",
                PATIENCE,
                kind,
                Role.TX,
                payload,
                key,
                () -> kind.outcomes(Role.TX, "duplicate") > duplicatesBefore || work.deadLetters(payload) > 0);
        assertThat(work.deadLetters(payload)).as("dead letters").isZero();
        assertThat(work.jdbcEffects(payload)).as("business rows").isEqualTo(1);
        assertThat(work.calls(payload)).as("runs (the failed one rolled back)").isEqualTo(2);
    }

    private static void transactionalJdbcControl(ListenerKind kind) throws Exception {
        Work work = kind.work();
        String key = unique("tx");
        String payload = unique("tx-control");
        kind.send(Role.PLAIN_TX, List.of(new Outgoing(payload, key)));
        waitFor(
                "the first copy committed",
                PATIENCE,
                kind,
                Role.PLAIN_TX,
                payload,
                key,
                () -> work.jdbcEffects(payload) == 1);
        kind.send(Role.PLAIN_TX, List.of(new Outgoing(payload, key)));
        waitFor(
                "the second copy committed",
                PATIENCE,
                kind,
                Role.PLAIN_TX,
                payload,
                key,
                () -> work.jdbcEffects(payload) == 2);
        assertThat(work.jdbcEffects(payload))
                .as("a plain listener writes the row twice")
                .isEqualTo(2);
    }

    private static void badKeyTransactedContainer(ListenerKind kind) throws Exception {
        Work work = kind.work();
        Ledger ledger = new Ledger(kind.dataSource());
        String keyless = unique("tx-keyless");
        List<Outgoing> good = new ArrayList<>();
        List<Outgoing> messages = new ArrayList<>();
        if (kind.batch()) {
            good.add(new Outgoing(unique("tx-good"), unique("tx-key")));
            messages.add(good.get(0));
            messages.add(new Outgoing(keyless, null));
            good.add(new Outgoing(unique("tx-good"), unique("tx-key")));
            messages.add(good.get(1));
        } else {
            messages.add(new Outgoing(keyless, null));
        }
        kind.send(Role.TX, messages);
        waitFor(
                "the keyless message dead-lettered and the good ones committed",
                PATIENCE,
                kind,
                Role.TX,
                keyless,
                null,
                () -> work.deadLetters(keyless) > 0
                        && good.stream()
                                .allMatch(m -> "COMPLETED".equals(ledger.status(kind.consumer(Role.TX), m.key()))));
        assertThat(work.calls(keyless)).as("runs of the keyless message").isZero();
        assertThat(work.deadLetters(keyless))
                .as("dead letters of the keyless message")
                .isEqualTo(1);
        for (Outgoing message : good) {
            assertThat(work.jdbcEffects(message.payload()))
                    .as("business rows of %s", message.payload())
                    .isEqualTo(1);
            assertThat(work.deadLetters(message.payload()))
                    .as("dead letters of a good message")
                    .isZero();
        }
    }

    private static void manualAck(ListenerKind kind) throws Exception {
        Work work = kind.work();
        Ledger ledger = new Ledger(kind.dataSource());
        String key = unique("manual");
        String payload = unique("manual-payload");
        kind.send(Role.MANUAL, List.of(new Outgoing(payload, key)));
        waitFor(
                "the row COMPLETED",
                PATIENCE,
                kind,
                Role.MANUAL,
                payload,
                key,
                () -> "COMPLETED".equals(ledger.status(kind.consumer(Role.MANUAL), key)));
        double duplicatesBefore = kind.outcomes(Role.MANUAL, "duplicate");
        kind.send(Role.MANUAL, List.of(new Outgoing(payload, key)));
        waitFor(
                "the second copy skipped as a duplicate",
                PATIENCE,
                kind,
                Role.MANUAL,
                payload,
                key,
                () -> kind.outcomes(Role.MANUAL, "duplicate") > duplicatesBefore);
        // Sumi acknowledged the duplicate the handler never saw: the destination goes on (an
        // unacknowledged one held the Rabbit consumers' prefetch of 1 for ever).
        String nextKey = unique("manual-next");
        String nextPayload = unique("manual-next-payload");
        kind.send(Role.MANUAL, List.of(new Outgoing(nextPayload, nextKey)));
        waitFor(
                "the next message run after the duplicate",
                PATIENCE,
                kind,
                Role.MANUAL,
                nextPayload,
                nextKey,
                () -> "COMPLETED".equals(ledger.status(kind.consumer(Role.MANUAL), nextKey)));
        assertThat(work.effects(payload)).as("effects").hasSize(1);
    }

    /** A message nacked (or rejected) with requeue once has not succeeded: its redelivery runs. */
    private static void manualNegative(ListenerKind kind, boolean reject) throws Exception {
        Work work = kind.work();
        Ledger ledger = new Ledger(kind.dataSource());
        String what = reject ? "reject" : "nack";
        String key = unique(what);
        String payload = unique(what + "-payload");
        Work.Script script = work.script(payload).nack(1);
        if (reject) {
            script.reject();
        }
        kind.send(Role.MANUAL, List.of(new Outgoing(payload, key)));
        waitFor(
                "the " + what + "ed message redelivered and run",
                PATIENCE,
                kind,
                Role.MANUAL,
                payload,
                key,
                () -> work.effects(payload).size() == 1
                        && "COMPLETED".equals(ledger.status(kind.consumer(Role.MANUAL), key)));
        assertThat(work.calls(payload)).as("runs: the %s, then the work", what).isEqualTo(2);
    }

    private static void manualMultiple(ListenerKind kind) throws Exception {
        Work work = kind.work();
        Ledger ledger = new Ledger(kind.dataSource());
        String keyA = unique("deferred");
        String payloadA = unique("deferred-payload");
        String payloadB = unique("keyless-payload");
        String keyC = unique("after");
        String payloadC = unique("after-payload");
        work.script(payloadA).defer();
        kind.send(Role.MANUAL_DEFER, List.of(new Outgoing(payloadA, keyA)));
        waitFor(
                "A run and kept unacknowledged",
                PATIENCE,
                kind,
                Role.MANUAL_DEFER,
                payloadA,
                keyA,
                () -> work.deferredAck(payloadA) != null);
        double duplicatesBefore = kind.outcomes(Role.MANUAL_DEFER, "duplicate");
        kind.send(Role.MANUAL_DEFER, List.of(new Outgoing(payloadB, null)));
        waitFor(
                "the keyless B dead-lettered",
                PATIENCE,
                kind,
                Role.MANUAL_DEFER,
                payloadB,
                null,
                () -> work.deadLetters(payloadB) > 0);
        // A requeued by a multiple nack comes back before C (a requeued message goes to the head).
        kind.send(Role.MANUAL_DEFER, List.of(new Outgoing(payloadC, keyC)));
        waitFor(
                "C run after B",
                PATIENCE,
                kind,
                Role.MANUAL_DEFER,
                payloadC,
                keyC,
                () -> "COMPLETED".equals(ledger.status(kind.consumer(Role.MANUAL_DEFER), keyC)));
        try {
            assertThat(work.deadLetters(payloadA))
                    .as("dead letters of A, which the application had not settled yet")
                    .isZero();
            assertThat(kind.outcomes(Role.MANUAL_DEFER, "duplicate"))
                    .as("redeliveries of A (skipped as duplicates) after Sumi settled B")
                    .isEqualTo(duplicatesBefore);
            assertThat(work.effects(payloadA)).as("effects of A").hasSize(1);
        } finally {
            Runnable ack = work.deferredAck(payloadA);
            if (ack != null) {
                ack.run();
            }
        }
    }

    private static void asyncFailedFuture(ListenerKind kind, Role role) throws Exception {
        Work work = kind.work();
        Ledger ledger = new Ledger(kind.dataSource());
        String key = unique("async");
        String payload = unique("async-payload");
        work.script(payload).failBefore(1);
        kind.send(role, List.of(new Outgoing(payload, key)));
        waitFor(
                "the failed future's message retried and run",
                PATIENCE,
                kind,
                role,
                payload,
                key,
                () -> work.effects(payload).size() == 1 || work.deadLetters(payload) > 0);
        assertThat(work.deadLetters(payload)).as("dead letters").isZero();
        if (role == Role.ASYNC) {
            waitFor(
                    "the row COMPLETED",
                    PATIENCE,
                    kind,
                    role,
                    payload,
                    key,
                    () -> "COMPLETED".equals(ledger.status(kind.consumer(role), key)));
        }
        assertThat(work.effects(payload)).as("effects").hasSize(1);
        assertThat(work.calls(payload))
                .as("runs: the failed future, then the success")
                .isEqualTo(2);
    }

    /**
     * Three messages (one batch for batch kinds): the first runs, the second's handler is held when
     * the container is asked to stop, and its work, cut short by the stop (as a handler's client
     * that the shutdown closes), fails; the third has not run. After the restart nothing is lost:
     * the interrupted message runs again with its key, every row ends COMPLETED, and a message
     * whose row was COMPLETED when the container stopped never runs again.
     */
    private static void stopRestartMidBatch(ListenerKind kind) throws Exception {
        Work work = kind.work();
        Ledger ledger = new Ledger(kind.dataSource());
        String consumer = kind.consumer(Role.STOP);
        Outgoing before = new Outgoing(unique("stop-before"), unique("stop"));
        Outgoing interrupted = new Outgoing(unique("stop-interrupted"), unique("stop"));
        Outgoing after = new Outgoing(unique("stop-after"), unique("stop"));
        List<Outgoing> messages = List.of(before, interrupted, after);
        Work.Script script = work.script(interrupted.payload()).hold().failBefore(1);
        kind.send(Role.STOP, messages);
        assertThat(script.awaitEntered())
                .as("the middle message's handler started")
                .isTrue();
        CompletableFuture<Void> stopped;
        try {
            stopped = kind.stop(Role.STOP);
        } finally {
            script.release();
        }
        stopped.get(PATIENCE.toSeconds(), TimeUnit.SECONDS);
        Set<Outgoing> completedAtStop = new HashSet<>();
        for (Outgoing message : messages) {
            if ("COMPLETED".equals(ledger.status(consumer, message.key()))) {
                completedAtStop.add(message);
            }
        }
        assertThat(completedAtStop)
                .as("rows COMPLETED by the interrupted run or the one after it")
                .doesNotContain(interrupted, after);
        kind.start(Role.STOP);
        waitFor(
                "every row COMPLETED after the restart",
                PATIENCE,
                kind,
                Role.STOP,
                interrupted.payload(),
                interrupted.key(),
                () -> messages.stream().allMatch(m -> "COMPLETED".equals(ledger.status(consumer, m.key())))
                        || messages.stream().anyMatch(m -> work.deadLetters(m.payload()) > 0));
        for (Outgoing message : messages) {
            assertThat(work.deadLetters(message.payload()))
                    .as("dead letters of %s", message.payload())
                    .isZero();
            assertThat(work.effects(message.payload()))
                    .as("effects of %s, each with its key", message.payload())
                    .isNotEmpty()
                    .containsOnly(new Work.Effect(message.key()));
        }
        for (Outgoing message : completedAtStop) {
            assertThat(work.effects(message.payload()))
                    .as("effects of %s, whose row was COMPLETED when the container stopped", message.payload())
                    .hasSize(1);
        }
        assertThat(work.calls(interrupted.payload()))
                .as("runs of the interrupted message: the one the stop cut short, then one after the restart")
                .isEqualTo(2);
        assertThat(work.effects(interrupted.payload())).hasSize(1);
        assertThat(work.effects(after.payload()))
                .as("effects of the message after the interrupted one")
                .hasSize(1);
    }

    /**
     * The budget's {@value BudgetWindow#LIMIT} calls are spent by two messages; the next two are
     * refused: the container pauses (or stops), nothing of them runs, nothing is claimed or
     * dead-lettered. The window rolls (the budgets' clock moves): the container resumes once and
     * the held messages run exactly once.
     */
    private static void budgetOpenThenClosed(ListenerKind kind) throws Exception {
        Work work = kind.work();
        Ledger ledger = new Ledger(kind.dataSource());
        String consumer = kind.consumer(Role.BUDGET);
        double pausesBefore = kind.budgetCount("sumi.budget.pauses");
        double resumesBefore = kind.budgetCount("sumi.budget.resumes");
        List<Outgoing> paid = new ArrayList<>();
        for (int i = 0; i < BudgetWindow.LIMIT; i++) {
            Outgoing message = new Outgoing(unique("budget-paid"), unique("budget"));
            paid.add(message);
            kind.send(Role.BUDGET, List.of(message));
            waitFor(
                    "paid message " + i + " COMPLETED",
                    PATIENCE,
                    kind,
                    Role.BUDGET,
                    message.payload(),
                    message.key(),
                    () -> "COMPLETED".equals(ledger.status(consumer, message.key()))
                            || work.deadLetters(message.payload()) > 0);
        }
        List<Outgoing> held = List.of(
                new Outgoing(unique("budget-held"), unique("budget")),
                new Outgoing(unique("budget-held"), unique("budget")));
        kind.send(Role.BUDGET, held);
        waitFor(
                "the listener paused for the spent budget",
                PATIENCE,
                kind,
                Role.BUDGET,
                held.get(0).payload(),
                held.get(0).key(),
                () -> kind.budgetCount("sumi.budget.pauses") > pausesBefore);
        for (Outgoing message : held) {
            assertThat(work.calls(message.payload()))
                    .as("runs of %s beyond the budget's limit", message.payload())
                    .isZero();
            assertThat(work.deadLetters(message.payload()))
                    .as("dead letters of %s, refused by the budget", message.payload())
                    .isZero();
            assertThat(ledger.status(consumer, message.key()))
                    .as("ledger row of %s, refused by the budget", message.payload())
                    .isNull();
        }
        // Counted before the roll: the held messages spend the new window's whole budget, which a
        // kind whose pauser watches the budget's state (Spring Cloud Stream's) pauses for again.
        double pausesAtRoll = kind.budgetCount("sumi.budget.pauses");
        kind.budgetWindow().roll();
        waitFor(
                "the held messages COMPLETED once the window rolled",
                PATIENCE,
                kind,
                Role.BUDGET,
                held.get(0).payload(),
                held.get(0).key(),
                () -> held.stream().allMatch(m -> "COMPLETED".equals(ledger.status(consumer, m.key())))
                        || held.stream().anyMatch(m -> work.deadLetters(m.payload()) > 0));
        List<Outgoing> all = new ArrayList<>(paid);
        all.addAll(held);
        for (Outgoing message : all) {
            assertThat(work.effects(message.payload()))
                    .as("effects of %s", message.payload())
                    .containsExactly(new Work.Effect(message.key()));
            assertThat(work.deadLetters(message.payload()))
                    .as("dead letters of %s", message.payload())
                    .isZero();
        }
        waitFor(
                "the resume counted",
                PATIENCE,
                kind,
                Role.BUDGET,
                held.get(0).payload(),
                held.get(0).key(),
                () -> kind.budgetCount("sumi.budget.resumes") > resumesBefore);
        assertThat(pausesAtRoll - pausesBefore)
                .as("sumi.budget.pauses: the listener paused once while the budget was spent")
                .isEqualTo(1);
        assertThat(kind.budgetCount("sumi.budget.resumes") - resumesBefore)
                .as("sumi.budget.resumes: and resumed once")
                .isEqualTo(1);
    }
}
