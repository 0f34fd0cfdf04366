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
    static final Duration DEAD_LEASE = Duration.ofSeconds(4);

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
                            + (key == null ? "-" : kind.ledger().row(kind.consumer(role), key)),
                    timeout);
        }
    }

    static String unique(String what) {
        return what + "-" + UUID.randomUUID();
    }

    private static void concurrentDuplicates(ListenerKind kind) throws Exception {
        Probe message = Probe.of(kind, Role.LEASE, "dup");
        Work.Script script = message.script().hold();
        double busyBefore = message.outcomes("busy");
        double duplicatesBefore = message.outcomes("duplicate");
        message.send(0);
        assertThat(script.awaitEntered()).as("the first copy's handler started").isTrue();
        message.send(1);
        try {
            message.await(
                    "the second copy refused as busy while the first runs",
                    () -> message.outcomes("busy") > busyBefore);
        } finally {
            script.release();
        }
        message.await(
                "the row COMPLETED and the second copy skipped as a duplicate",
                () -> message.completed() && message.outcomes("duplicate") > duplicatesBefore);
        assertThat(message.effects()).as("effects of two concurrent copies").hasSize(1);
        assertThat(message.deadLetters()).as("dead letters").isZero();
    }

    private static void concurrentDuplicatesControl(ListenerKind kind) throws Exception {
        Probe message = Probe.of(kind, Role.PLAIN, "dup");
        Work.Script script = message.script().hold();
        message.send(0);
        assertThat(script.awaitEntered()).as("the first copy's handler started").isTrue();
        message.send(1);
        try {
            message.await("the second copy's handler running beside the first", () -> message.calls() == 2);
        } finally {
            script.release();
        }
        message.await("both effects", () -> message.effects().size() == 2);
        assertThat(message.effects()).as("a plain listener runs both copies").hasSize(2);
    }

    private static void heldByDeadInstance(ListenerKind kind) throws Exception {
        Probe message = Probe.of(kind, Role.HELD, "held");
        message.holdAsDeadInstance(DEAD_LEASE);
        message.send();
        message.await(
                "the held message run once its holder's lease ended (or given up: dead-lettered)",
                PATIENCE.plus(DEAD_LEASE),
                () -> !message.effects().isEmpty() || message.deadLettered());
        assertThat(message.deadLetters())
                .as("dead letters of a message whose key a dead instance held; ledger row %s", message.row())
                .isZero();
        message.await("the row COMPLETED", message::completed);
        assertThat(message.effects()).as("effects").hasSize(1);
    }

    private static void heldByDeadInstanceControl(ListenerKind kind) throws Exception {
        Probe message = new Probe(kind, Role.PLAIN_HELD, unique("held-control"), unique("held"));
        message.script().failBefore(Integer.MAX_VALUE);
        message.send();
        message.await("the broker's limit dead-letters a message refused on every delivery", message::deadLettered);
        assertThat(message.effects()).isEmpty();
    }

    private static void failureThenSuccess(ListenerKind kind) throws Exception {
        Probe message = Probe.of(kind, Role.LEASE, "fail");
        message.script().failBefore(2);
        message.send();
        message.awaitCompleted("the third run succeeded and the row COMPLETED", null);
        assertThat(message.effects()).as("effects").hasSize(1);
        assertThat(message.calls()).as("runs").isEqualTo(3);
    }

    private static void failureAfterEffect(ListenerKind kind) throws Exception {
        Probe message = Probe.of(kind, Role.LEASE, "after");
        message.script().failAfterEffect(1);
        message.send();
        message.awaitCompleted("the redelivery ran again and the row COMPLETED", null);
        assertThat(message.effects())
                .as("the effect is repeated, with the same key, after a failure before completion")
                .containsExactly(new Work.Effect(message.key()), new Work.Effect(message.key()));
    }

    private static void badKeyAlone(ListenerKind kind, @Nullable String badKey) throws Exception {
        String payload = unique("bad-key");
        Probe message = new Probe(kind, Role.LEASE, payload, badKey == null ? null : badKey + payload);
        message.send();
        message.await("the message dead-lettered", message::deadLettered);
        assertThat(message.calls()).as("runs of a message without a usable key").isZero();
        if (message.key() != null) {
            assertThat(message.status()).isNull();
        }
    }

    private static void badKeysInBatch(ListenerKind kind) throws Exception {
        List<Probe> batch = new ArrayList<>();
        List<Probe> good = new ArrayList<>();
        List<Probe> bad = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            String payload = unique("batch-" + i);
            Probe message;
            if (i == 1) {
                message = new Probe(kind, Role.LEASE, payload, null);
                bad.add(message);
            } else if (i == 3) {
                message = new Probe(kind, Role.LEASE, payload, "k".repeat(201) + payload);
                bad.add(message);
            } else {
                message = new Probe(kind, Role.LEASE, payload, unique("batch-key"));
                good.add(message);
            }
            batch.add(message);
        }
        Probe.sendAll(kind, Role.LEASE, batch);
        bad.get(0)
                .await(
                        "the good messages COMPLETED and the bad ones dead-lettered",
                        () -> good.stream().allMatch(Probe::completed)
                                && bad.stream().allMatch(Probe::deadLettered));
        for (Probe message : good) {
            assertThat(message.effects()).as("effects of %s", message.payload()).hasSize(1);
            assertThat(message.deadLetters())
                    .as("dead letters of a good message")
                    .isZero();
        }
        for (Probe message : bad) {
            assertThat(message.calls()).as("runs of a bad message").isZero();
        }
    }

    private static void transactionalJdbc(ListenerKind kind) throws Exception {
        Probe message = Probe.of(kind, Role.TX, "tx");
        message.script().failAfterEffect(1);
        message.send();
        message.await("the redelivery committed", () -> message.completed() || message.deadLettered());
        double duplicatesBefore = message.outcomes("duplicate");
        message.send();
        message.await(
                "the second copy skipped as a duplicate",
                () -> message.outcomes("duplicate") > duplicatesBefore || message.deadLettered());
        message.assertNoDeadLetter(null);
        assertThat(message.jdbcEffects()).as("business rows").isEqualTo(1);
        assertThat(message.calls()).as("runs (the failed one rolled back)").isEqualTo(2);
    }

    private static void transactionalJdbcControl(ListenerKind kind) throws Exception {
        Probe message = new Probe(kind, Role.PLAIN_TX, unique("tx-control"), unique("tx"));
        message.send();
        message.await("the first copy committed", () -> message.jdbcEffects() == 1);
        message.send();
        message.await("the second copy committed", () -> message.jdbcEffects() == 2);
        assertThat(message.jdbcEffects())
                .as("a plain listener writes the row twice")
                .isEqualTo(2);
    }

    private static void badKeyTransactedContainer(ListenerKind kind) throws Exception {
        Probe keyless = new Probe(kind, Role.TX, unique("tx-keyless"), null);
        List<Probe> good = new ArrayList<>();
        List<Probe> messages = new ArrayList<>();
        if (kind.batch()) {
            good.add(new Probe(kind, Role.TX, unique("tx-good"), unique("tx-key")));
            messages.add(good.get(0));
            messages.add(keyless);
            good.add(new Probe(kind, Role.TX, unique("tx-good"), unique("tx-key")));
            messages.add(good.get(1));
        } else {
            messages.add(keyless);
        }
        Probe.sendAll(kind, Role.TX, messages);
        keyless.await(
                "the keyless message dead-lettered and the good ones committed",
                () -> keyless.deadLettered() && good.stream().allMatch(Probe::completed));
        assertThat(keyless.calls()).as("runs of the keyless message").isZero();
        assertThat(keyless.deadLetters())
                .as("dead letters of the keyless message")
                .isEqualTo(1);
        for (Probe message : good) {
            assertThat(message.jdbcEffects())
                    .as("business rows of %s", message.payload())
                    .isEqualTo(1);
            assertThat(message.deadLetters())
                    .as("dead letters of a good message")
                    .isZero();
        }
    }

    private static void manualAck(ListenerKind kind) throws Exception {
        Probe message = Probe.of(kind, Role.MANUAL, "manual");
        message.send();
        message.await("the row COMPLETED", message::completed);
        double duplicatesBefore = message.outcomes("duplicate");
        message.send();
        message.await("the second copy skipped as a duplicate", () -> message.outcomes("duplicate") > duplicatesBefore);
        // Sumi acknowledged the duplicate the handler never saw: the destination goes on (an
        // unacknowledged one held the Rabbit consumers' prefetch of 1 for ever).
        Probe next = Probe.of(kind, Role.MANUAL, "manual-next");
        next.send();
        next.await("the next message run after the duplicate", next::completed);
        assertThat(message.effects()).as("effects").hasSize(1);
    }

    /** A message nacked (or rejected) with requeue once has not succeeded: its redelivery runs. */
    private static void manualNegative(ListenerKind kind, boolean reject) throws Exception {
        String what = reject ? "reject" : "nack";
        Probe message = Probe.of(kind, Role.MANUAL, what);
        Work.Script script = message.script().nack(1);
        if (reject) {
            script.reject();
        }
        message.send();
        message.await(
                "the " + what + "ed message redelivered and run",
                () -> message.effects().size() == 1 && message.completed());
        assertThat(message.calls()).as("runs: the %s, then the work", what).isEqualTo(2);
    }

    private static void manualMultiple(ListenerKind kind) throws Exception {
        Work work = kind.work();
        Probe deferred = Probe.of(kind, Role.MANUAL_DEFER, "deferred");
        Probe keyless = new Probe(kind, Role.MANUAL_DEFER, unique("keyless-payload"), null);
        Probe after = Probe.of(kind, Role.MANUAL_DEFER, "after");
        deferred.script().defer();
        deferred.send();
        deferred.await("A run and kept unacknowledged", () -> work.deferredAck(deferred.payload()) != null);
        double duplicatesBefore = deferred.outcomes("duplicate");
        keyless.send();
        keyless.await("the keyless B dead-lettered", keyless::deadLettered);
        // A requeued by a multiple nack comes back before C (a requeued message goes to the head).
        after.send();
        after.await("C run after B", after::completed);
        try {
            assertThat(deferred.deadLetters())
                    .as("dead letters of A, which the application had not settled yet")
                    .isZero();
            assertThat(deferred.outcomes("duplicate"))
                    .as("redeliveries of A (skipped as duplicates) after Sumi settled B")
                    .isEqualTo(duplicatesBefore);
            assertThat(deferred.effects()).as("effects of A").hasSize(1);
        } finally {
            Runnable ack = work.deferredAck(deferred.payload());
            if (ack != null) {
                ack.run();
            }
        }
    }

    private static void asyncFailedFuture(ListenerKind kind, Role role) throws Exception {
        Probe message = Probe.of(kind, role, "async");
        message.script().failBefore(1);
        message.send();
        message.await(
                "the failed future's message retried and run",
                () -> message.effects().size() == 1 || message.deadLettered());
        message.assertNoDeadLetter(null);
        if (role == Role.ASYNC) {
            message.await("the row COMPLETED", message::completed);
        }
        assertThat(message.effects()).as("effects").hasSize(1);
        assertThat(message.calls())
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
        Probe before = new Probe(kind, Role.STOP, unique("stop-before"), unique("stop"));
        Probe interrupted = new Probe(kind, Role.STOP, unique("stop-interrupted"), unique("stop"));
        Probe after = new Probe(kind, Role.STOP, unique("stop-after"), unique("stop"));
        List<Probe> messages = List.of(before, interrupted, after);
        Work.Script script = interrupted.script().hold().failBefore(1);
        Probe.sendAll(kind, Role.STOP, messages);
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
        Set<Probe> completedAtStop = new HashSet<>();
        for (Probe message : messages) {
            if (message.completed()) {
                completedAtStop.add(message);
            }
        }
        assertThat(completedAtStop)
                .as("rows COMPLETED by the interrupted run or the one after it")
                .doesNotContain(interrupted, after);
        kind.start(Role.STOP);
        interrupted.await(
                "every row COMPLETED after the restart",
                () -> messages.stream().allMatch(Probe::completed)
                        || messages.stream().anyMatch(Probe::deadLettered));
        for (Probe message : messages) {
            assertThat(message.deadLetters())
                    .as("dead letters of %s", message.payload())
                    .isZero();
            assertThat(message.effects())
                    .as("effects of %s, each with its key", message.payload())
                    .isNotEmpty()
                    .containsOnly(new Work.Effect(message.key()));
        }
        for (Probe message : completedAtStop) {
            assertThat(message.effects())
                    .as("effects of %s, whose row was COMPLETED when the container stopped", message.payload())
                    .hasSize(1);
        }
        assertThat(interrupted.calls())
                .as("runs of the interrupted message: the one the stop cut short, then one after the restart")
                .isEqualTo(2);
        assertThat(interrupted.effects()).hasSize(1);
        assertThat(after.effects())
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
        boolean pauses = kind.pausesForBudget();
        double pausesBefore = kind.budgetCount("sumi.budget.pauses");
        double resumesBefore = kind.budgetCount("sumi.budget.resumes");
        double holdsBefore = pauses ? 0 : kind.budgetHolds();
        List<Probe> paid = new ArrayList<>();
        for (int i = 0; i < BudgetWindow.LIMIT; i++) {
            Probe message = new Probe(kind, Role.BUDGET, unique("budget-paid"), unique("budget"));
            paid.add(message);
            message.send();
            message.await("paid message " + i + " COMPLETED", () -> message.completed() || message.deadLettered());
        }
        List<Probe> held = List.of(
                new Probe(kind, Role.BUDGET, unique("budget-held"), unique("budget")),
                new Probe(kind, Role.BUDGET, unique("budget-held"), unique("budget")));
        Probe.sendAll(kind, Role.BUDGET, held);
        if (pauses) {
            held.get(0)
                    .await(
                            "the listener paused for the spent budget",
                            () -> kind.budgetCount("sumi.budget.pauses") > pausesBefore);
        } else {
            held.get(0)
                    .await(
                            "both messages held for the spent budget",
                            () -> kind.budgetHolds() - holdsBefore >= held.size());
        }
        for (Probe message : held) {
            assertThat(message.calls())
                    .as("runs of %s beyond the budget's limit", message.payload())
                    .isZero();
            assertThat(message.deadLetters())
                    .as("dead letters of %s, refused by the budget", message.payload())
                    .isZero();
            assertThat(message.status())
                    .as("ledger row of %s, refused by the budget", message.payload())
                    .isNull();
        }
        // Counted before the roll: the held messages spend the new window's whole budget, which a
        // kind whose pauser watches the budget's state (Spring Cloud Stream's) pauses for again.
        double pausesAtRoll = kind.budgetCount("sumi.budget.pauses");
        kind.budgetWindow().roll();
        held.get(0)
                .await(
                        "the held messages COMPLETED once the window rolled",
                        () -> held.stream().allMatch(Probe::completed)
                                || held.stream().anyMatch(Probe::deadLettered));
        List<Probe> all = new ArrayList<>(paid);
        all.addAll(held);
        for (Probe message : all) {
            assertThat(message.effects())
                    .as("effects of %s", message.payload())
                    .containsExactly(new Work.Effect(message.key()));
            assertThat(message.deadLetters())
                    .as("dead letters of %s", message.payload())
                    .isZero();
        }
        if (!pauses) {
            return;
        }
        held.get(0).await("the resume counted", () -> kind.budgetCount("sumi.budget.resumes") > resumesBefore);
        assertThat(pausesAtRoll - pausesBefore)
                .as("sumi.budget.pauses: the listener paused once while the budget was spent")
                .isEqualTo(1);
        assertThat(kind.budgetCount("sumi.budget.resumes") - resumesBefore)
                .as("sumi.budget.resumes: and resumed once")
                .isEqualTo(1);
    }
}
