package io.sumi.conformance;

import static io.sumi.conformance.ConformanceCatalogue.PATIENCE;
import static io.sumi.conformance.ConformanceCatalogue.unique;
import static io.sumi.conformance.ConformanceCatalogue.waitFor;
import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.Callable;
import org.jspecify.annotations.Nullable;

/**
 * One message of a scenario on one role's listener, and the skeleton every scenario repeats
 * around it: send it, wait for what the scenario expects (failing with what it saw, {@link
 * ConformanceCatalogue#waitFor}), read its ledger row, its runs, effects and dead letters.
 */
final class Probe {

    private final ListenerKind kind;
    private final Role role;
    private final String payload;
    private final @Nullable String key;
    private final Ledger ledger;

    Probe(ListenerKind kind, Role role, String payload, @Nullable String key) {
        this.kind = kind;
        this.role = role;
        this.payload = payload;
        this.key = key;
        this.ledger = kind.ledger();
    }

    /** A message named after {@code what}: key {@code what-…}, payload {@code what-payload-…}, both unique. */
    static Probe of(ListenerKind kind, Role role, String what) {
        return new Probe(kind, role, unique(what + "-payload"), unique(what));
    }

    String payload() {
        return payload;
    }

    @Nullable
    String key() {
        return key;
    }

    Work work() {
        return kind.work();
    }

    /** The handler's script for this message's payload. */
    Work.Script script() {
        return work().script(payload);
    }

    /** The message as sent, on lane 0. */
    Outgoing outgoing() {
        return new Outgoing(payload, key);
    }

    /** Sends {@code messages} to {@code role}'s listener at once (one batch for a batch kind), lane 0. */
    static void sendAll(ListenerKind kind, Role role, List<Probe> messages) throws Exception {
        kind.send(role, messages.stream().map(Probe::outgoing).toList());
    }

    /** Sends one copy of the message (lane 0). */
    Probe send() throws Exception {
        return send(0);
    }

    /** Sends one copy of the message on {@code lane}. */
    Probe send(int lane) throws Exception {
        kind.send(role, List.of(new Outgoing(payload, key, lane)));
        return this;
    }

    void await(String what, Callable<Boolean> condition) {
        await(what, PATIENCE, condition);
    }

    void await(String what, Duration atMost, Callable<Boolean> condition) {
        waitFor(what, atMost, kind, role, payload, key, condition);
    }

    /** Whether the message's ledger row is COMPLETED. */
    boolean completed() {
        return key != null && "COMPLETED".equals(status());
    }

    /** The ledger row's status, or {@code null} when there is none. */
    @Nullable
    String status() {
        return key == null ? null : ledger.status(kind.consumer(role), key);
    }

    /** Writes the row a crashed instance that held the key leaves: IN_PROGRESS, its lease live for {@code lease}. */
    void holdAsDeadInstance(Duration lease) {
        ledger.holdAsDeadInstance(kind.consumer(role), java.util.Objects.requireNonNull(key), lease);
    }

    /** Every column of the ledger row, for failure messages. */
    List<java.util.Map<String, Object>> row() {
        return key == null ? List.of() : ledger.row(kind.consumer(role), key);
    }

    int calls() {
        return work().calls(payload);
    }

    List<Work.Effect> effects() {
        return work().effects(payload);
    }

    int jdbcEffects() {
        return work().jdbcEffects(payload);
    }

    int deadLetters() {
        return work().deadLetters(payload);
    }

    boolean deadLettered() {
        return work().deadLetters(payload) > 0;
    }

    /** {@code sumi.messages} with {@code outcome} for the role's listener. */
    double outcomes(String outcome) {
        return kind.outcomes(role, outcome);
    }

    /**
     * Waits for the row COMPLETED (a dead letter ends the wait at once) and asserts that nothing
     * was dead-lettered; {@code context} (a fault, or {@code null}) goes into the assertion's text.
     */
    void awaitCompleted(String what, @Nullable Object context) {
        await(what, () -> completed() || deadLettered());
        assertNoDeadLetter(context);
    }

    void assertNoDeadLetter(@Nullable Object context) {
        if (context == null) {
            assertThat(work().deadLetters(payload)).as("dead letters").isZero();
        } else {
            assertThat(work().deadLetters(payload))
                    .as("dead letters (%s)", context)
                    .isZero();
        }
    }

    /**
     * At least once: a lost completion lets the redelivery run the handler again, with the same
     * key (one or two effects, every one with the message's key).
     */
    void assertEffectsAtLeastOnce() {
        assertThat(work().effects(payload))
                .as("effects, each with the message's key")
                .isNotEmpty()
                .hasSizeLessThanOrEqualTo(2)
                .containsOnly(new Work.Effect(key));
    }

    @Override
    public String toString() {
        return payload + " (key " + key + ")";
    }
}
