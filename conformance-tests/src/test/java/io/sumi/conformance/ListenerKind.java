package io.sumi.conformance;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;

/**
 * The driver a listener kind (Kafka record, Rabbit consumer batch, JMS, …) gives the catalogue: how
 * to send to each {@link Role}'s listener, what its ledger namespace is, and which scenarios do not
 * apply to it and why. Everything else (the handler, its effects, its dead letters) is the shared
 * {@link Work}.
 */
public interface ListenerKind {

    /** The column of {@code docs/guarantees.md}: {@code kafka-record}, {@code jms}, … */
    String id();

    /** Whether the listeners are batch listeners (a batch scenario's messages arrive as one batch). */
    boolean batch();

    /**
     * Scenarios that do not apply to this kind, with the reason the table shows. Their tests are not
     * generated (this is not a skip: the cell says why there is nothing to run).
     */
    Map<Scenario, String> notApplicable();

    /**
     * Scenarios that apply to this kind but have no test for it yet, with what is missing: the table
     * shows them as gaps.
     */
    default Map<Scenario, String> notWritten() {
        return Map.of();
    }

    /**
     * Sends {@code messages} to {@code role}'s listener. For a {@link #batch()} kind they must reach
     * the listener in one batch (the driver holds the container while it sends).
     */
    void send(Role role, List<Outgoing> messages) throws Exception;

    /** The ledger namespace ({@code consumer} column) of {@code role}'s listener. */
    String consumer(Role role);

    Work work();

    /** The application's DataSource (the effects' and dead letters' tables; the JDBC ledger's). */
    DataSource dataSource();

    /** The ledger the listeners claim in: by default the JDBC ledger in {@link #dataSource()}. */
    default Ledger ledger() {
        return Ledger.jdbc(dataSource());
    }

    MeterRegistry meters();

    /** The faults of the ledger's DataSource in this kind's application. */
    default LedgerFaults ledgerFaults() {
        throw new UnsupportedOperationException(id() + " has no ledger faults");
    }

    /** Whether {@code role}'s listener container still runs (false as soon as a stop was asked). */
    default boolean listenerRunning(Role role) {
        throw new UnsupportedOperationException(id() + " cannot tell whether a listener runs");
    }

    /**
     * What the broker still sees of {@code role}'s stopped listener, or {@code null} when nothing: a
     * member of its Kafka consumer group, a consumer of its RabbitMQ queue. Kinds whose stopped
     * container keeps its consumers by design (a stopped JMS container is paused) answer {@code null}.
     */
    default @Nullable String stillConsuming(Role role) throws Exception {
        return null;
    }

    /**
     * Asks {@code role}'s listener container to stop, through the application's endpoint registry,
     * as an operator or a rolling restart does, and returns once it takes no new work ({@link
     * #listenerRunning} is false); the future completes when it has stopped (its running handlers
     * ended, or the container gave up waiting for them).
     */
    default CompletableFuture<Void> stop(Role role) {
        throw new UnsupportedOperationException(id() + " cannot stop a container: implement stop and start, or"
                + " declare " + Scenario.STOP_RESTART_MID_BATCH + " and " + Scenario.LEDGER_DOWN_DURING_SHUTDOWN
                + " not applicable");
    }

    /** Starts {@code role}'s listener container again after {@link #stop}, and returns once it consumes. */
    default void start(Role role) {
        throw new UnsupportedOperationException(id() + " cannot start a container");
    }

    /** The budgets' clock of this kind's application; {@link Role#BUDGET}'s listener is bound to {@link #budget()}. */
    default BudgetWindow budgetWindow() {
        throw new UnsupportedOperationException(id() + " has no budget-bound listener: declare "
                + Scenario.BUDGET_OPEN_THEN_CLOSED + " not applicable or not written");
    }

    /**
     * Whether this kind's container stops taking work for a spent budget by pausing (Kafka) or
     * stopping (RabbitMQ, JMS), counted by {@code sumi.budget.pauses} and {@code .resumes}; {@code
     * false} for a kind that cannot pause and holds each record that meets the open budget instead (a
     * Kafka share container: the record's lock renewed, no delivery counted), counted by {@link
     * #budgetHolds()}.
     */
    default boolean pausesForBudget() {
        return true;
    }

    /** For a kind that holds records for an open budget ({@link #pausesForBudget()} false): its holds so far. */
    default double budgetHolds() {
        throw new UnsupportedOperationException(id() + " pauses for a budget: it does not hold records");
    }

    /** The budget {@link Role#BUDGET}'s listener is bound to: named after its ledger consumer. */
    default String budget() {
        return consumer(Role.BUDGET);
    }

    /** {@code name} ({@code sumi.budget.pauses} or {@code .resumes}) of {@link #budget()}, every listener's, 0 before any. */
    default double budgetCount(String name) {
        return meters().find(name).tag("budget", budget()).counters().stream()
                .mapToDouble(Counter::count)
                .sum();
    }

    /** {@code sumi.messages} with {@code outcome} for {@code role}'s listener, 0 before any. */
    default double outcomes(Role role, String outcome) {
        Counter counter = meters().find("sumi.messages")
                .tag("consumer", consumer(role))
                .tag("outcome", outcome)
                .counter();
        return counter == null ? 0 : counter.count();
    }
}
