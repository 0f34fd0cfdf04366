package io.sumi.autoconfigure;

import org.springframework.boot.test.context.SpringBootTest;

/** {@link KafkaManualAckTestBase} without the poll claim: each record claimed and completed on its own. */
@SpringBootTest(
        classes = KafkaManualAckTestBase.App.class,
        properties = {
            "spring.kafka.consumer.auto-offset-reset=earliest",
            "spring.kafka.consumer.properties.max.poll.interval.ms=60000",
            "spring.kafka.listener.concurrency=1",
            "spring.flyway.locations=classpath:db/sumi/{vendor}",
            "sumi.kafka.busy-retry-interval=100ms",
            "sumi.consumer.lease=30s",
            "sumi.test.topic-suffix=.plain"
        })
class KafkaManualAckIntegrationTests extends KafkaManualAckTestBase {}
