package io.sumi.conformance;

import static io.sumi.conformance.ConformanceCatalogue.PATIENCE;
import static org.assertj.core.api.Assertions.assertThat;

import io.sumi.conformance.LedgerFaults.Fault;
import io.sumi.conformance.LedgerFaults.Point;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * The four "ledger down" scenarios ({@link Scenario#LEDGER_DOWN_DURING_CLAIM} …), on the faults of
 * {@link LedgerFaults}: the ledger's database refuses the scenario's key only, so the other
 * listeners of the shared context never notice.
 */
public final class LedgerDownScenarios {

    /**
     * How many of the claim's statements the ledger refuses before it answers again: more than any
     * kind's container gives a failing message before it gives it up (the Kafka application's error
     * handler retries 5 times, Artemis delivers 3 times), so an outage that spends the message's
     * redelivery budget shows.
     */
    static final int OUTAGE = 10;

    /** How many commits fail: within every kind's redelivery budget (Artemis: 3 deliveries). */
    static final int FAILED_COMMITS = 2;

    private LedgerDownScenarios() {}

    static void duringClaim(ListenerKind kind) throws Exception {
        Probe message = Probe.of(kind, Role.LEDGER_DOWN, "down-claim");
        Work work = message.work();
        Fault fault = kind.ledgerFaults().fail(message.key(), Point.STATEMENTS, Integer.MAX_VALUE);
        try {
            message.send();
            message.await(
                    "the ledger refused " + OUTAGE + " statements of the key (" + fault + ")",
                    () -> fault.fired() >= OUTAGE || message.deadLettered() || work.calls(message.payload()) > 0);
            assertThat(work.calls(message.payload())).as("runs without a claim").isZero();
            assertThat(work.deadLetters(message.payload()))
                    .as("dead letters while the ledger is down (%s)", fault)
                    .isZero();
        } finally {
            fault.clear();
        }
        message.awaitCompleted("the message run once the ledger answers, its row COMPLETED", fault);
        assertThat(work.effects(message.payload())).as("effects").containsExactly(new Work.Effect(message.key()));
    }

    static void duringCompletion(ListenerKind kind) throws Exception {
        Probe message = Probe.of(kind, Role.LEDGER_DOWN, "down-complete");
        Work.Script script = message.script().hold();
        message.send();
        assertThat(script.awaitEntered()).as("the handler started").isTrue();
        // Down from the handler's last moment: the completion (and a release, a renewal) fails; the
        // redelivery's claim is answered (a claim refused is the scenario above).
        Fault fault = kind.ledgerFaults().fail(message.key(), Point.AFTER_CLAIM, Integer.MAX_VALUE);
        try {
            script.release();
            message.await("the completion refused (" + fault + ")", fault::refusedCompletion);
        } finally {
            fault.clear();
        }
        message.awaitCompleted("the row COMPLETED once the ledger answers", fault);
        message.assertEffectsAtLeastOnce();
    }

    static void duringCommit(ListenerKind kind) throws Exception {
        Probe message = Probe.of(kind, Role.TX, "down-commit");
        Work work = message.work();
        Fault fault = kind.ledgerFaults().fail(message.key(), Point.COMMIT, FAILED_COMMITS);
        message.send();
        message.await(
                "the row COMPLETED after " + FAILED_COMMITS + " failed commits",
                () -> message.completed() || message.deadLettered());
        assertThat(fault.fired()).as("commits that failed").isEqualTo(FAILED_COMMITS);
        message.assertNoDeadLetter(null);
        assertThat(work.jdbcEffects(message.payload()))
                .as("business rows (the failed commits rolled theirs back)")
                .isEqualTo(1);
        assertThat(work.calls(message.payload()))
                .as("runs: each failed commit ran it")
                .isEqualTo(FAILED_COMMITS + 1);
    }

    static void duringShutdown(ListenerKind kind) throws Exception {
        Role role = Role.LEDGER_DOWN;
        Probe message = Probe.of(kind, role, "down-stop");
        Work.Script script = message.script().hold();
        message.send();
        assertThat(script.awaitEntered()).as("the handler started").isTrue();
        Fault fault = kind.ledgerFaults().fail(message.key(), Point.STATEMENTS, Integer.MAX_VALUE);
        boolean stopped = false;
        try {
            CompletableFuture<Void> stopping = kind.stop(role);
            message.await("the container stopping", () -> !kind.listenerRunning(role));
            // The handler ends while the container stops and the ledger is down: its completion fails.
            script.release();
            try {
                stopping.get(PATIENCE.toSeconds(), TimeUnit.SECONDS);
            } catch (TimeoutException ex) {
                throw new AssertionError(
                        "the container's stop did not end within " + PATIENCE.toSeconds()
                                + " s while the ledger was down (" + fault + ")",
                        ex);
            } catch (ExecutionException ex) {
                throw new AssertionError("the container's stop failed while the ledger was down", ex.getCause());
            }
            stopped = true;
            // A container may stop before its handler's completion failed (a Rabbit container gives up
            // waiting for its workers after its shutdown timeout): the completion may come after the stop.
            message.await("the handler's completion refused (" + fault + ")", fault::refusedCompletion);
            message.await("the stopped listener gone from the broker", () -> kind.stillConsuming(role) == null);
            message.assertNoDeadLetter(null);
        } finally {
            fault.clear();
            script.release();
            if (stopped) {
                kind.start(role);
            }
        }
        message.awaitCompleted("the message run after the restart, its row COMPLETED", fault);
        message.assertEffectsAtLeastOnce();
    }
}
