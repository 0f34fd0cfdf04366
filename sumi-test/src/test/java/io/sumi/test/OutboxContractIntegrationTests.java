package io.sumi.test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.sumi.outbox.Outbox;
import io.sumi.outbox.OutboxDispatcher;
import io.sumi.outbox.OutboxMessage;
import io.sumi.outbox.OutboxPublisher;
import io.sumi.outbox.OutboxTable;
import io.sumi.test.outbox.OutboxContracts;
import java.time.Duration;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.kafka.test.context.EmbeddedKafka;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.TransactionDefinition;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * The two outbox contracts fail for the code they are meant to catch: an append that commits on
 * its own (contract 1), a listener without {@code @IdempotentHandler} (contract 2), a call that
 * appends nothing. Where they pass is shown by {@link OutboxRollbackContractKitTests} and
 * {@link OutboxRedeliveryContractKitTests}, which extend the abstract contract classes as an
 * application would.
 */
@SpringBootTest(classes = KitTestApplication.class)
@EmbeddedKafka(
        partitions = 3,
        topics = {"kit.idempotent", "kit.plain", "kit.idempotent-dlt", "kit.plain-dlt"},
        bootstrapServersProperty = "spring.kafka.bootstrap-servers")
class OutboxContractIntegrationTests {

    @Autowired
    Outbox outbox;

    @Autowired
    OutboxTable table;

    @Autowired
    OutboxPublisher publisher;

    @Autowired
    ObjectProvider<OutboxDispatcher> dispatcher;

    @Autowired
    PlatformTransactionManager transactions;

    @Autowired
    SumiTest sumi;

    /** Appends in a transaction of its own, as a REQUIRES_NEW service method would: the bug contract 1 catches. */
    void appendInItsOwnTransaction() {
        TransactionTemplate own = new TransactionTemplate(transactions);
        own.setPropagationBehavior(TransactionDefinition.PROPAGATION_REQUIRES_NEW);
        own.executeWithoutResult(status -> outbox.append(message("kit.idempotent")));
    }

    static OutboxMessage message(String topic) {
        return OutboxMessage.builder("order-" + UUID.randomUUID(), topic, "\"hello\"")
                .build();
    }

    @Test
    void theRollbackContractFailsForAnAppendThatCommitsOnItsOwn() {
        assertThatThrownBy(() ->
                        OutboxContracts.rollbackLeavesNoOutboxRow(table, transactions, this::appendInItsOwnTransaction))
                .isInstanceOf(AssertionError.class)
                .hasMessageContaining("survived the rollback");
    }

    @Test
    void theRollbackContractPassesForAnAppendInTheBusinessTransaction() {
        OutboxContracts.rollbackLeavesNoOutboxRow(table, transactions, () -> outbox.append(message("kit.idempotent")));
    }

    @Test
    void theRollbackContractFailsForACallThatAppendsNothing() {
        assertThatThrownBy(() -> OutboxContracts.rollbackLeavesNoOutboxRow(table, transactions, () -> {}))
                .isInstanceOf(AssertionError.class)
                .hasMessageContaining("proves nothing");
    }

    @Test
    void theRedeliveryContractFailsForAListenerWithoutSumi() {
        boolean running = dispatcher.getObject().isRunning();

        assertThatThrownBy(() -> OutboxContracts.redeliveryIsDeduplicated(
                        sumi,
                        table,
                        publisher,
                        dispatcher.getIfAvailable(),
                        () -> new TransactionTemplate(transactions)
                                .executeWithoutResult(status -> outbox.append(message("kit.plain"))),
                        "kit-plain",
                        Long::toString,
                        Duration.ofSeconds(2)))
                .isInstanceOf(AssertionError.class)
                .hasMessageContaining("ran 2 times");
        // The application's dispatcher runs again after the check.
        assertThat(dispatcher.getObject().isRunning()).isEqualTo(running);
    }
}
