package io.sumi.examples.mail;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.sumi.consumer.MissingIdempotencyKeyException;
import io.sumi.examples.mail.demo.DeadLetters;
import io.sumi.examples.mail.demo.DemoPlan;
import io.sumi.examples.mail.demo.DemoProperties;
import io.sumi.examples.mail.demo.DemoReport;
import io.sumi.examples.mail.demo.DemoServices;
import io.sumi.examples.mail.demo.MailDemo;
import io.sumi.store.MessageStatus;
import io.sumi.store.ProcessedMessageStore;
import jakarta.mail.internet.MimeMessage;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.kafka.support.KafkaHeaders;

/**
 * Runs the demo end to end, as {@code java -jar} does but with 300 messages: in-process Kafka,
 * PostgreSQL and SMTP, the real listener, Sumi's starter and the demo's producer.
 */
@SpringBootTest(classes = MailConsumerApplication.class, properties = {
        "sumi.demo.messages=300",
        "sumi.demo.failing-keys=5",
        "sumi.demo.poison-messages=2",
        "sumi.demo.timeout=90s"})
class MailDemoIntegrationTests {

    @Autowired
    MailDemo demo;

    @Autowired
    DemoProperties properties;

    @Autowired
    DemoServices services;

    @Autowired
    MailConsumerProperties mail;

    @Autowired
    ProcessedMessageStore ledger;

    @Test
    void everyKeyIsMailedExactlyOnceDuplicatesAreSkippedAndKeylessMessagesAreDeadLettered() throws Exception {
        DemoPlan plan = DemoPlan.generate(properties.messages(), properties.duplicateRatio(), properties.concurrentShare(),
                properties.failingKeys(), properties.poisonMessages(), mail.partitions(), properties.seed());
        assertThat(plan.duplicates()).as("the plan has duplicates").isGreaterThan(50);
        assertThat(plan.concurrentDuplicates()).as("some are sent concurrently").isGreaterThan(0);

        DemoReport report = demo.run();

        assertThat(report.timedOut()).as("every message was handled in time").isFalse();
        assertThat(report.published()).isEqualTo(300);
        assertThat(report.uniqueKeys()).isEqualTo(plan.uniqueKeys().size());

        // What the SMTP server received: one mail per key, for every key, and nothing else.
        Map<String, Integer> mailsPerKey = new HashMap<>();
        for (MimeMessage message : services.greenMail().getReceivedMessages()) {
            String[] key = message.getHeader(SmtpMailGateway.IDEMPOTENCY_KEY_HEADER);
            assertThat(key).as("Idempotency-Key header of %s", message.getSubject()).isNotNull().hasSize(1);
            mailsPerKey.merge(key[0], 1, Integer::sum);
            assertThat(message.getMessageID()).isEqualTo(SmtpMailGateway.messageId(key[0], mail.messageIdDomain()));
        }
        assertThat(report.mailsSent()).as("mails sent == unique keys").isEqualTo(plan.uniqueKeys().size());
        assertThat(mailsPerKey.keySet()).isEqualTo(plan.uniqueKeys());
        assertThat(mailsPerKey).allSatisfy((key, mails) -> assertThat(mails).as("mails for key %s", key).isEqualTo(1));

        // Sumi: the handler completed once per key; every copy was skipped as a duplicate.
        assertThat(report.processed()).isEqualTo(plan.uniqueKeys().size());
        assertThat(report.duplicatesSkipped()).isGreaterThanOrEqualTo(plan.duplicates());
        assertThat(report.rejected()).isEqualTo(2);
        // The first attempt of each failing key failed once, and its retry sent the mail.
        assertThat(report.injectedFailures()).isEqualTo(5);
        assertThat(report.handlerFailures()).isEqualTo(5);
        assertThat(report.ledgerRows()).isEqualTo(Map.of("COMPLETED", (long) plan.uniqueKeys().size()));
        for (String key : plan.failingKeys()) {
            assertThat(ledger.find(MailListener.ID, key)).as(key).get().satisfies(row -> {
                assertThat(row.status()).isEqualTo(MessageStatus.COMPLETED);
                assertThat(row.attempts()).isGreaterThanOrEqualTo(2);
            });
        }

        // The dead-letter topic, read on its own: the two keyless messages, with the reason.
        List<ConsumerRecord<String, String>> deadLetters = readDeadLetters(2);
        assertThat(deadLetters).hasSize(2).allSatisfy(record -> {
            assertThat(record.headers().lastHeader("idempotency-key")).isNull();
            assertThat(DeadLetters.header(record, KafkaHeaders.DLT_EXCEPTION_CAUSE_FQCN))
                    .isEqualTo(MissingIdempotencyKeyException.class.getName());
            assertThat(DeadLetters.header(record, KafkaHeaders.DLT_EXCEPTION_MESSAGE)).contains("No idempotency key");
            assertThat(record.value()).contains("ops@example.com");
        });
        assertThat(report.deadLettered()).isEqualTo(2);

        assertThat(report.ok()).isTrue();
        assertThat(report.format()).contains("mails sent == unique keys: OK").contains("RESULT: OK");
    }

    private List<ConsumerRecord<String, String>> readDeadLetters(int expected) {
        Properties config = new Properties();
        config.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, services.kafkaBootstrapServers());
        config.put(ConsumerConfig.GROUP_ID_CONFIG, "mail-demo-test");
        config.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        config.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class);
        config.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class);
        List<ConsumerRecord<String, String>> records = new ArrayList<>();
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(config)) {
            consumer.subscribe(List.of(mail.deadLetterTopic()));
            await().atMost(Duration.ofSeconds(30)).until(() -> {
                consumer.poll(Duration.ofMillis(200)).forEach(records::add);
                return records.size() >= expected;
            });
            // Nothing more arrives: only the keyless messages were dead-lettered.
            consumer.poll(Duration.ofMillis(500)).forEach(records::add);
        }
        return records;
    }
}
