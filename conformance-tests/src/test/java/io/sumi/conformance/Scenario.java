package io.sumi.conformance;

/**
 * The catalogue: every promise Sumi makes to a listener, one row of {@code docs/guarantees.md} each.
 * A negative control ({@link #control()} true) runs the same steps on a plain listener without Sumi
 * and asserts the double effect or the loss the real scenario rules out, so that a pass of the real
 * scenario means something (its assertions can fail, and the broker's limits are really in force).
 */
public enum Scenario {
    CONCURRENT_DUPLICATES(
            "Concurrent duplicates on two consumers",
            "Two copies of one message reach two consumers while the first copy's handler is still"
                    + " running (held on a latch until the second copy was refused as busy). The handler's"
                    + " effect happens once, the ledger row is COMPLETED, and the second copy is"
                    + " acknowledged as a duplicate (never dead-lettered)."),
    CONCURRENT_DUPLICATES_CONTROL(
            "Concurrent duplicates, plain listener (control)",
            "The same two copies on a listener without Sumi: both run at once and the effect happens"
                    + " twice. Proves the scenario above can fail."),
    HELD_BY_DEAD_INSTANCE(
            "Key held by a dead instance under the broker's redelivery limit",
            "A ledger row IN_PROGRESS with a live lease (4 s) for the key, as a crashed instance leaves it;"
                    + " the message arrives on a destination whose broker counts redeliveries (Rabbit quorum"
                    + " queue with x-delivery-limit 3, Artemis max-delivery-attempts 3, Kafka error handler"
                    + " without retries). The message is neither dead-lettered nor dropped: once the lease"
                    + " ends it is taken over and the handler runs exactly once."),
    HELD_BY_DEAD_INSTANCE_CONTROL(
            "Redelivery limit in force, plain listener (control)",
            "A listener without Sumi that refuses the message on every delivery, on the same kind of"
                    + " destination: the broker dead-letters it. Proves the limit the scenario above"
                    + " survives is really there."),
    FAILURE_THEN_SUCCESS(
            "Handler failure then success",
            "The handler throws (before any effect) on its first two runs and succeeds on the third."
                    + " The effect happens once, the row is COMPLETED, nothing is dead-lettered."),
    FAILURE_AFTER_EFFECT(
            "Failure after the effect, before completion",
            "The handler performs its effect and then throws, once. The message is not lost and not"
                    + " acknowledged as done: the redelivery runs the handler again with the same key (so"
                    + " the provider can deduplicate), the effect is seen twice with that key, and the row"
                    + " ends COMPLETED."),
    KEYLESS_ALONE(
            "Keyless message",
            "A message with no key header (and no key expression). The handler never runs, no ledger"
                    + " row is written, and the message is dead-lettered (never dropped, never run blindly)."),
    INVALID_KEY_ALONE(
            "Invalid key (longer than the ledger column)",
            "A message whose key has 201 characters. The handler never runs, no row is written, the"
                    + " message is dead-lettered."),
    BAD_KEYS_IN_BATCH(
            "Keyless and invalid keys inside a batch",
            "One batch: a good message, a keyless one, a good one, one with an invalid key, a good one."
                    + " The good ones run exactly once and complete; the two bad ones are dead-lettered and"
                    + " never run."),
    TRANSACTIONAL_JDBC(
            "Transactional mode with a JDBC transaction (transacted container)",
            "A TRANSACTIONAL handler writes a row in the ledger's database and throws once after the"
                    + " write; the rollback takes the row and the ledger row away, the redelivery writes"
                    + " it again; a later duplicate delivery writes nothing. Exactly one business row, row"
                    + " COMPLETED. Rabbit containers are channel-transacted, JMS session-transacted."),
    TRANSACTIONAL_JDBC_CONTROL(
            "Transactional JDBC, plain listener (control)",
            "The same @Transactional listener without Sumi, given the same message twice: two business"
                    + " rows. Proves the scenario above can fail."),
    BAD_KEY_TRANSACTED_CONTAINER(
            "Keyless message on a transacted container with a JDBC transaction",
            "On a channel- or session-transacted container with a JDBC transaction manager: a keyless"
                    + " message (inside a batch between two good ones for batch listeners). The good"
                    + " messages commit exactly once, the keyless one is dead-lettered once and never run;"
                    + " the container's rollback must not undo Sumi's reject."),
    MANUAL_ACK(
            "MANUAL acknowledgement: ack, then a duplicate",
            "The handler acknowledges itself. It runs once, the row is COMPLETED; a second copy is a"
                    + " duplicate that Sumi acknowledges (the destination drains)."),
    MANUAL_NACK(
            "MANUAL acknowledgement: nack",
            "The handler negatively acknowledges (Kafka Acknowledgment.nack, Rabbit basicNack with"
                    + " requeue) on the first delivery without doing its work. A nacked message has not"
                    + " succeeded: the redelivery runs the handler, the effect happens once, the row ends"
                    + " COMPLETED."),
    MANUAL_REJECT(
            "MANUAL acknowledgement: reject with requeue",
            "The handler rejects the delivery with requeue (Rabbit basicReject) on the first delivery without"
                    + " doing its work. A rejected message has not succeeded: the redelivery runs the handler, the"
                    + " effect happens once, the row ends COMPLETED."),
    MANUAL_MULTIPLE(
            "MANUAL acknowledgement: Sumi's settlement leaves the application's own deliveries alone",
            "With MANUAL acks and a prefetch of 2, the handler keeps delivery A unacknowledged (it acks later,"
                    + " as batching applications do); then a keyless message B arrives, which Sumi refuses. B is"
                    + " dead-lettered; A is neither dead-lettered nor redelivered (Sumi settles B alone, never with"
                    + " multiple=true), and a later message still runs."),
    ASYNC_FAILED_FUTURE(
            "Async return type (CompletableFuture) that fails",
            "The listener returns a CompletableFuture that fails on the first delivery. The row is not"
                    + " COMPLETED by the return: the message is retried, the work runs again and succeeds,"
                    + " the effect happens once."),
    ASYNC_FAILED_FUTURE_CONTROL(
            "Async failure, plain listener (control)",
            "The same failing future on a listener without Sumi: the container retries it and the"
                    + " second run succeeds. Proves the container redelivers a failed future here."),
    LEDGER_DOWN_DURING_CLAIM(
            "Ledger down during the claim",
            "The ledger's database refuses every statement of the message's key (a lost connection,"
                    + " SQLSTATE 08006) from its arrival until it has refused 10, more than any kind's container"
                    + " gives a failing message (the Kafka application retries 5 times, Artemis delivers 3 times)."
                    + " Meanwhile the handler never runs (there is no claim), and the message is neither"
                    + " dead-lettered nor acknowledged: once the ledger answers it runs exactly once and its row"
                    + " ends COMPLETED. The faults are scoped to the key, so the listeners sharing the context"
                    + " are untouched; the count of refused statements proves the outage happened."),
    LEDGER_DOWN_DURING_COMPLETION(
            "Ledger down during the completion",
            "The handler runs (held on a latch while the ledger goes down) and succeeds, but the ledger refuses"
                    + " the completion (and the release and renewals that come with it) until a completing statement"
                    + " was refused. The message is not acknowledged as done and not dead-lettered: it is delivered"
                    + " again (or, with the poll claim, its kept completion is written before the offset commit), the"
                    + " handler may run again with the same key (at least once, as after a failure after the"
                    + " effect: at most two effects, every one with the key), and the row ends COMPLETED. The"
                    + " listener's lease is 3 s, so a claim left leased lapses within the scenario."),
    LEDGER_DOWN_DURING_COMMIT(
            "Ledger down during the commit",
            "A TRANSACTIONAL handler writes its business row in the ledger's database; the commit of that"
                    + " JDBC transaction (which holds the COMPLETED ledger row) fails twice, as a connection lost"
                    + " before its commit does (the database rolls it back). Everything is rolled back each time:"
                    + " the message is delivered again, not dead-lettered, and in the end there is exactly one"
                    + " business row and the row is COMPLETED (the handler ran three times). With the poll claim"
                    + " the completions written before an offset commit are the completion row above."),
    LEDGER_DOWN_DURING_SHUTDOWN(
            "Ledger down during shutdown",
            "While the handler runs, the ledger goes down and the listener's container is stopped; the handler"
                    + " ends while the container stops, so its completion fails. The stop ends within 30 s (no"
                    + " hang), the broker no longer sees the listener (Kafka: no member left in its consumer group,"
                    + " issue 19 A5 for the poll claim; RabbitMQ: no consumer on its queue; a stopped JMS container"
                    + " is paused and keeps its consumers by design), nothing is dead-lettered; once the ledger"
                    + " answers and the container is started again, the message runs (again, with the same key:"
                    + " its claim lapsed) and its row ends COMPLETED."),
    STOP_RESTART_MID_BATCH(
            "Container stop and restart mid-batch",
            "Three messages (one batch for batch kinds) on a listener of one consumer: the first runs, the"
                    + " second's handler is held on a latch when its container is asked to stop (through the"
                    + " endpoint registry, as an operator or a rolling restart does), and its work, cut short by"
                    + " the stop, fails; the third has not run. After the restart nothing is lost and nothing is"
                    + " dead-lettered: the interrupted message runs again with its key and completes, the third"
                    + " runs once, every row ends COMPLETED, and a message whose row was COMPLETED when the"
                    + " container stopped never runs again (a message whose batch failed before its row"
                    + " completed may run again, with its key)."),
    BUDGET_OPEN_THEN_CLOSED(
            "Budget open, then closed",
            "A listener bound to a local budget of 2 calls an hour (`@IdempotentHandler(budget = ...)`): two"
                    + " messages spend it, the next two are refused. The container pauses (Kafka) or stops"
                    + " (RabbitMQ, JMS), or, a Kafka share container, which cannot pause, holds each of them (its"
                    + " lock renewed, no delivery counted); neither message runs, neither is claimed in the ledger"
                    + " nor dead-lettered."
                    + " The budget's clock moves past the window: the container resumes and both held messages"
                    + " run exactly once, their rows COMPLETED; `sumi.budget.pauses` and `sumi.budget.resumes`"
                    + " each count one (for a pausing container).");

    private final String title;
    private final String asserts;

    Scenario(String title, String asserts) {
        this.title = title;
        this.asserts = asserts;
    }

    /** The row's name in the table. */
    public String title() {
        return title;
    }

    /** What a pass of this scenario means. */
    public String asserts() {
        return asserts;
    }

    /** Whether this row is a negative control (a listener without Sumi). */
    public boolean control() {
        return name().endsWith("_CONTROL");
    }
}
