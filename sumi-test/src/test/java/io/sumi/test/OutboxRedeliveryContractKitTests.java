package io.sumi.test;

import io.sumi.outbox.Outbox;
import io.sumi.test.outbox.OutboxRedeliveryContractTests;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.kafka.test.context.EmbeddedKafka;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

/** Contract 2 as an application runs it: the outbox feeds the {@code @IdempotentHandler} listener {@code kit-idempotent}. */
@SpringBootTest(classes = KitTestApplication.class)
@EmbeddedKafka(
        partitions = 3,
        topics = {"kit.idempotent", "kit.plain", "kit.idempotent-dlt", "kit.plain-dlt"},
        bootstrapServersProperty = "spring.kafka.bootstrap-servers")
class OutboxRedeliveryContractKitTests extends OutboxRedeliveryContractTests {

    @Autowired
    Outbox outbox;

    @Autowired
    PlatformTransactionManager transactions;

    @Override
    protected void appendToOutbox() {
        new TransactionTemplate(transactions)
                .executeWithoutResult(
                        status -> outbox.append(OutboxContractIntegrationTests.message("kit.idempotent")));
    }

    @Override
    protected String consumer() {
        return "kit-idempotent";
    }
}
