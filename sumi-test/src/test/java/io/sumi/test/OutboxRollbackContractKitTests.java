package io.sumi.test;

import io.sumi.test.outbox.OutboxRollbackContractTests;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.kafka.test.context.EmbeddedKafka;

/** Contract 1 as an application runs it: a @Transactional service method that appends. */
@SpringBootTest(classes = KitTestApplication.class)
@EmbeddedKafka(
        partitions = 3,
        topics = {"kit.idempotent", "kit.plain", "kit.idempotent-dlt", "kit.plain-dlt"},
        bootstrapServersProperty = "spring.kafka.bootstrap-servers")
class OutboxRollbackContractKitTests extends OutboxRollbackContractTests {

    @Autowired
    KitTestApplication.Shop shop;

    @Override
    protected void appendToOutbox() {
        shop.placeOrder();
    }
}
