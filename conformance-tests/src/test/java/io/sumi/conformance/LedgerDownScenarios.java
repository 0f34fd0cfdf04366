package io.sumi.conformance;

import static io.sumi.conformance.ConformanceCatalogue.PATIENCE;
import static io.sumi.conformance.ConformanceCatalogue.unique;
import static io.sumi.conformance.ConformanceCatalogue.waitFor;
import static org.assertj.core.api.Assertions.assertThat;

import io.sumi.conformance.LedgerFaults.Fault;
import io.sumi.conformance.LedgerFaults.Point;
import java.util.List;
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
        Work work = kind.work();
        Ledger ledger = new Ledger(kind.dataSource());
        Role role = Role.LEDGER_DOWN;
        String key = unique("down-claim");
        String payload = unique("down-claim-payload");
        Fault fault = kind.ledgerFaults().fail(key, Point.STATEMENTS, Integer.MAX_VALUE);
        try {
            kind.send(role, List.of(new Outgoing(payload, key)));
            waitFor(
                    "the ledger refused " + OUTAGE + " statements of the key (" + fault + ")",
                    PATIENCE,
                    kind,
                    role,
                    payload,
                    key,
                    () -> fault.fired() >= OUTAGE || work.deadLetters(payload) > 0 || work.calls(payload) > 0);
            assertThat(work.calls(payload)).as("runs without a claim").isZero();
            assertThat(work.deadLetters(payload))
                    .as("dead letters while the ledger is down (%s)", fault)
                    .isZero();
        } finally {
            fault.clear();
        }
        waitFor(
                "the message run once the ledger answers, its row COMPLETED",
                PATIENCE,
                kind,
                role,
                payload,
                key,
                () -> "COMPLETED".equals(ledger.status(kind.consumer(role), key)) || work.deadLetters(payload) > 0);
        assertThat(work.deadLetters(payload)).as("dead letters (%s)", fault).isZero();
        assertThat(work.effects(payload)).as("effects").containsExactly(new Work.Effect(key));
    }

    static void duringCompletion(ListenerKind kind) throws Exception {
        Work work = kind.work();
        Ledger ledger = new Ledger(kind.dataSource());
        Role role = Role.LEDGER_DOWN;
        String key = unique("down-complete");
        String payload = unique("down-complete-payload");
        Work.Script script = work.script(payload).hold();
        kind.send(role, List.of(new Outgoing(payload, key)));
        assertThat(script.awaitEntered()).as("the handler started").isTrue();
        // Down from the handler's last moment: the completion (and a release, a renewal) fails; the
        // redelivery's claim is answered (a claim refused is the scenario above).
        Fault fault = kind.ledgerFaults().fail(key, Point.AFTER_CLAIM, Integer.MAX_VALUE);
        try {
            script.release();
            waitFor(
                    "the completion refused (" + fault + ")",
                    PATIENCE,
                    kind,
                    role,
                    payload,
                    key,
                    fault::refusedCompletion);
        } finally {
            fault.clear();
        }
        waitFor(
                "the row COMPLETED once the ledger answers",
                PATIENCE,
                kind,
                role,
                payload,
                key,
                () -> "COMPLETED".equals(ledger.status(kind.consumer(role), key)) || work.deadLetters(payload) > 0);
        assertThat(work.deadLetters(payload)).as("dead letters (%s)", fault).isZero();
        // At least once: the completion was lost, so the redelivery may run the handler again, with the same key.
        assertThat(work.effects(payload))
                .as("effects, each with the message's key")
                .isNotEmpty()
                .hasSizeLessThanOrEqualTo(2)
                .containsOnly(new Work.Effect(key));
    }

    static void duringCommit(ListenerKind kind) throws Exception {
        Work work = kind.work();
        Ledger ledger = new Ledger(kind.dataSource());
        Role role = Role.TX;
        String key = unique("down-commit");
        String payload = unique("down-commit-payload");
        Fault fault = kind.ledgerFaults().fail(key, Point.COMMIT, FAILED_COMMITS);
        kind.send(role, List.of(new Outgoing(payload, key)));
        waitFor(
                "the row COMPLETED after " + FAILED_COMMITS + " failed commits",
                PATIENCE,
                kind,
                role,
                payload,
                key,
                () -> "COMPLETED".equals(ledger.status(kind.consumer(role), key)) || work.deadLetters(payload) > 0);
        assertThat(fault.fired()).as("commits that failed").isEqualTo(FAILED_COMMITS);
        assertThat(work.deadLetters(payload)).as("dead letters").isZero();
        assertThat(work.jdbcEffects(payload))
                .as("business rows (the failed commits rolled theirs back)")
                .isEqualTo(1);
        assertThat(work.calls(payload)).as("runs: each failed commit ran it").isEqualTo(FAILED_COMMITS + 1);
    }

    static void duringShutdown(ListenerKind kind) throws Exception {
        Work work = kind.work();
        Ledger ledger = new Ledger(kind.dataSource());
        Role role = Role.LEDGER_DOWN;
        String key = unique("down-stop");
        String payload = unique("down-stop-payload");
        Work.Script script = work.script(payload).hold();
        kind.send(role, List.of(new Outgoing(payload, key)));
        assertThat(script.awaitEntered()).as("the handler started").isTrue();
        Fault fault = kind.ledgerFaults().fail(key, Point.STATEMENTS, Integer.MAX_VALUE);
        boolean stopped = false;
        try {
            CompletableFuture<Void> stopping = kind.stop(role);
            waitFor("the container stopping", PATIENCE, kind, role, payload, key, () -> !kind.listenerRunning(role));
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
            waitFor(
                    "the handler's completion refused (" + fault + ")",
                    PATIENCE,
                    kind,
                    role,
                    payload,
                    key,
                    fault::refusedCompletion);
            waitFor(
                    "the stopped listener gone from the broker",
                    PATIENCE,
                    kind,
                    role,
                    payload,
                    key,
                    () -> kind.stillConsuming(role) == null);
            assertThat(work.deadLetters(payload)).as("dead letters").isZero();
        } finally {
            fault.clear();
            script.release();
            if (stopped) {
                kind.start(role);
            }
        }
        waitFor(
                "the message run after the restart, its row COMPLETED",
                PATIENCE,
                kind,
                role,
                payload,
                key,
                () -> "COMPLETED".equals(ledger.status(kind.consumer(role), key)) || work.deadLetters(payload) > 0);
        assertThat(work.deadLetters(payload)).as("dead letters (%s)", fault).isZero();
        assertThat(work.effects(payload))
                .as("effects, each with the message's key")
                .isNotEmpty()
                .hasSizeLessThanOrEqualTo(2)
                .containsOnly(new Work.Effect(key));
    }
}
