package io.sumi.autoconfigure;

import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.kafka.test.context.EmbeddedKafka;

/** {@link KafkaManualAckTestBase} without the poll claim: each record claimed and completed on its own. */
@SpringBootTest(
        classes = KafkaManualAckTestBase.App.class,
        properties = {
            "spring.kafka.consumer.auto-offset-reset=earliest",
            "spring.kafka.consumer.properties.max.poll.interval.ms=60000",
            "spring.kafka.listener.concurrency=1",
            "spring.flyway.locations=classpath:db/sumi/{vendor}",
            "sumi.kafka.busy-retry-interval=100ms",
            "sumi.consumer.lease=30s"
        })
@EmbeddedKafka(partitions = 1, bootstrapServersProperty = "spring.kafka.bootstrap-servers")
class KafkaManualAckIntegrationTests extends KafkaManualAckTestBase {}
