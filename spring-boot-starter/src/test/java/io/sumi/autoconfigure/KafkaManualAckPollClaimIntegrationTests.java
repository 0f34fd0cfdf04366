package io.sumi.autoconfigure;

import org.springframework.boot.test.context.SpringBootTest;

/**
 * {@link KafkaManualAckTestBase} with the poll claim ({@code sumi.kafka.poll-claim=true}): the
 * lease-mode record listeners run against their poll's claims, whose completions are written
 * before each offset commit (docs/kafka-poll-claim.md).
 */
@SpringBootTest(
        classes = KafkaManualAckTestBase.App.class,
        properties = {
            "spring.kafka.consumer.auto-offset-reset=earliest",
            "spring.kafka.consumer.properties.max.poll.interval.ms=60000",
            "spring.kafka.listener.concurrency=1",
            "spring.flyway.locations=classpath:db/sumi/{vendor}",
            "sumi.kafka.busy-retry-interval=100ms",
            "sumi.kafka.poll-claim=true",
            "sumi.consumer.lease=30s",
            "sumi.test.topic-suffix=.poll-claim"
        })
class KafkaManualAckPollClaimIntegrationTests extends KafkaManualAckTestBase {}
