package io.sumi.examples.mail;

import static io.sumi.test.SumiAssertions.assertThatSumi;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.icegreen.greenmail.util.GreenMail;
import io.sumi.consumer.exception.MissingIdempotencyKeyException;
import io.sumi.examples.mail.demo.DeadLetters;
import io.sumi.examples.mail.demo.DemoPlan;
import io.sumi.examples.mail.demo.DemoProperties;
import io.sumi.examples.mail.demo.DemoReport;
import io.sumi.examples.mail.demo.MailDemo;
import io.sumi.examples.mail.orders.Order;
import io.sumi.examples.mail.orders.OrderService;
import io.sumi.examples.support.EmbeddedServices;
import io.sumi.outbox.OutboxDispatcher;
import io.sumi.outbox.OutboxHeaders;
import io.sumi.outbox.OutboxPublisher;
import io.sumi.outbox.OutboxTable;
import io.sumi.store.MessageStatus;
import io.sumi.store.ProcessedMessageStore;
import io.sumi.test.DeliveryOutcome;
import io.sumi.test.SumiTest;
import io.sumi.test.outbox.OutboxContracts;
import io.sumi.test.outbox.OutboxRollbackContractTests;
import jakarta.mail.internet.MimeMessage;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.dao.DataIntegrityViolationException;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.kafka.support.KafkaHeaders;

/**
 * Runs the demo end to end, as {@code java -jar} does but with 300 orders: in-process Kafka,
 * PostgreSQL and SMTP, the order service appending to Sumi's outbox, the starter's dispatcher,
 * the real listener, and the demo's copies and keyless messages on the broker.
 */
@SpringBootTest(
        classes = MailConsumerApplication.class,
        properties = {
            "sumi.demo.orders=300",
            "sumi.demo.rolled-back-orders=2",
            "sumi.demo.failing-orders=5",
            "sumi.demo.poison-messages=2",
            "sumi.demo.timeout=90s"
        })
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class MailDemoIntegrationTests extends OutboxRollbackContractTests {

    @Autowired
    MailDemo demo;

    @Autowired
    DemoProperties properties;

    @Autowired
    EmbeddedServices<GreenMail> services;

    @Autowired
    MailConsumerProperties mail;

    @Autowired
    ProcessedMessageStore ledger;

    @Autowired
    JdbcTemplate jdbc;

    @Autowired
    OrderService orders;

    @Autowired
    OutboxTable outbox;

    @Autowired
    OutboxPublisher publisher;

    @Autowired
    ObjectProvider<OutboxDispatcher> dispatcher;

    @Autowired
    SumiTest sumi;

    @Test
    @org.junit.jupiter.api.Order(1) // First: its figures count every order and mail; the other tests add their own.
    void
            everyOrdersMailIsSentExactlyOnceRolledBackOrdersLeaveNothingDuplicatesAreSkippedAndKeylessMessagesAreDeadLettered()
                    throws Exception {
        DemoPlan plan = DemoPlan.generate(
                properties.orders(),
                properties.rolledBackOrders(),
                properties.failingOrders(),
                properties.duplicateRatio(),
                properties.concurrentShare(),
                properties.poisonMessages(),
                mail.partitions(),
                properties.seed());
        List<String> committed = plan.committedOrderIds();
        assertThat(committed).hasSize(298);
        assertThat(plan.copies()).as("the plan copies dispatched records").hasSizeGreaterThan(50);
        assertThat(plan.concurrentCopies())
                .as("some copies are sent concurrently")
                .isGreaterThan(0);
        assertThat(plan.lateCopies()).as("some copies are sent later").isGreaterThan(0);

        DemoReport report = demo.run();

        assertThat(report.timedOut()).as("every message was handled in time").isFalse();
        assertThat(report.orders().placed()).isEqualTo(300);
        assertThat(report.orders().committed()).isEqualTo(298);
        assertThat(report.orders().rolledBack()).isEqualTo(2);

        // The database: one order and one outbox row per committed order, committed together.
        assertThat(jdbc.queryForList("SELECT id FROM orders", String.class))
                .containsExactlyInAnyOrderElementsOf(committed);
        Map<String, Long> outboxIdOfOrder = new HashMap<>();
        jdbc.query(
                "SELECT id, aggregate_id, dispatch_outcome, dispatched_at, parked_at FROM outbox WHERE topic = ?",
                rs -> {
                    assertThat(outboxIdOfOrder.put(rs.getString("aggregate_id"), rs.getLong("id")))
                            .as("a second outbox row for order %s", rs.getString("aggregate_id"))
                            .isNull();
                    assertThat(rs.getString("dispatch_outcome")).isEqualTo("SENT");
                    assertThat(rs.getTimestamp("dispatched_at")).isNotNull();
                    assertThat(rs.getTimestamp("parked_at")).isNull();
                },
                mail.topic());
        assertThat(outboxIdOfOrder.keySet()).containsExactlyInAnyOrderElementsOf(committed);

        // The rolled-back orders: a line failed after the outbox append; nothing of them is left.
        assertThat(plan.rolledBack()).hasSize(2).allSatisfy(order -> {
            assertThat(jdbc.queryForObject("SELECT COUNT(*) FROM orders WHERE id = ?", Long.class, order))
                    .isZero();
            assertThat(jdbc.queryForObject("SELECT COUNT(*) FROM order_lines WHERE order_id = ?", Long.class, order))
                    .isZero();
            assertThat(jdbc.queryForObject("SELECT COUNT(*) FROM outbox WHERE aggregate_id = ?", Long.class, order))
                    .isZero();
        });

        // What the SMTP server received: one mail per committed order, under its outbox id, and nothing else.
        Map<String, Integer> mailsPerKey = new HashMap<>();
        Map<String, String> subjectOfKey = new HashMap<>();
        for (MimeMessage message : services.service().getReceivedMessages()) {
            String[] key = message.getHeader(SmtpMailGateway.IDEMPOTENCY_KEY_HEADER);
            assertThat(key)
                    .as("Idempotency-Key header of %s", message.getSubject())
                    .isNotNull()
                    .hasSize(1);
            mailsPerKey.merge(key[0], 1, Integer::sum);
            subjectOfKey.put(key[0], message.getSubject());
            assertThat(message.getMessageID()).isEqualTo(SmtpMailGateway.messageId(key[0], mail.messageIdDomain()));
        }
        assertThat(report.mails().received()).as("mails == orders").isEqualTo(committed.size());
        assertThat(mailsPerKey)
                .as("one mail per key")
                .hasSize(committed.size())
                .allSatisfy((key, mails) ->
                        assertThat(mails).as("mails for key %s", key).isEqualTo(1));
        outboxIdOfOrder.forEach((order, id) -> assertThat(subjectOfKey.get(Long.toString(id)))
                .as("the mail of order %s", order)
                .isEqualTo(OrderService.subject(order)));
        assertThat(subjectOfKey.values())
                .noneMatch(subject -> plan.rolledBack().stream().anyMatch(subject::contains));

        // The outbox's figures.
        assertThat(report.outbox().rows()).isEqualTo(298);
        assertThat(report.outbox().dispatched()).isEqualTo(298);
        assertThat(report.outbox().dispatchedCounter()).isEqualTo(298);
        assertThat(report.outbox().pending()).isZero();
        assertThat(report.outbox().parked()).isZero();
        assertThat(report.outbox().timerCount()).isEqualTo(298);
        assertThat(report.outbox().lagP95())
                .isPositive()
                .isLessThanOrEqualTo(report.outbox().lagMax());
        assertThat(report.outbox().timerP95()).isNotNull();

        // Sumi: the handler completed once per order; every copy was skipped as a duplicate.
        assertThat(report.broker().copies()).isEqualTo(plan.copies().size());
        assertThat(report.broker().concurrentCopies()).isEqualTo(plan.concurrentCopies());
        assertThat(report.consumer().processed()).isEqualTo(committed.size());
        assertThat(report.consumer().duplicatesSkipped())
                .isGreaterThanOrEqualTo(plan.copies().size());
        assertThat(report.consumer().rejected()).isEqualTo(2);
        // The first attempt of each greylisted order's mail failed once, and its retry sent the mail.
        assertThat(report.consumer().injectedFailures()).isEqualTo(5);
        assertThat(report.consumer().handlerFailures()).isEqualTo(5);
        assertThat(report.consumer().ledgerRows()).isEqualTo(Map.of("COMPLETED", (long) committed.size()));
        for (String order : plan.greylisted()) {
            assertThat(ledger.find(MailListener.ID, Long.toString(outboxIdOfOrder.get(order))))
                    .as(order)
                    .get()
                    .satisfies(row -> {
                        assertThat(row.status()).isEqualTo(MessageStatus.COMPLETED);
                        assertThat(row.attempts()).isGreaterThanOrEqualTo(2);
                    });
        }

        // The dead-letter topic, read on its own: the two keyless messages, with the reason.
        List<ConsumerRecord<String, String>> deadLetters = readDeadLetters(2);
        assertThat(deadLetters).hasSize(2).allSatisfy(record -> {
            assertThat(record.headers().lastHeader(OutboxHeaders.OUTBOX_ID)).isNull();
            assertThat(record.headers().lastHeader("idempotency-key")).isNull();
            assertThat(DeadLetters.header(record, KafkaHeaders.DLT_EXCEPTION_CAUSE_FQCN))
                    .isEqualTo(MissingIdempotencyKeyException.class.getName());
            assertThat(DeadLetters.header(record, KafkaHeaders.DLT_EXCEPTION_MESSAGE))
                    .contains("No idempotency key");
            assertThat(record.value()).contains("ops@example.com");
        });
        assertThat(report.consumer().deadLettered()).isEqualTo(2);

        assertThat(report.ok()).isTrue();
        assertThat(report.format())
                .contains("every order's mail sent exactly once: OK")
                .contains("rolled-back orders left nothing: OK")
                .contains("outbox drained: OK")
                .contains("RESULT: OK");
        assertThat(new HashSet<>(mailsPerKey.keySet()))
                .isEqualTo(new HashSet<>(
                        outboxIdOfOrder.values().stream().map(String::valueOf).toList()));
    }

    /** Sumi's outbox contract 1 along the shop's own failure path: a line the database refuses after the append. */
    @Test
    @org.junit.jupiter.api.Order(2)
    void anOrderWhoseWriteFailsAfterTheOutboxAppendLeavesNeitherOrderNorOutboxRow() {
        Order order = new Order(
                "ord-rollback-test",
                "rollback@example.com",
                List.of(
                        new Order.Line("ink-01", "Sumi ink stick", 1, 1890),
                        new Order.Line("brush-01", "Fude brush", 0, 2350)));

        Throwable failure = OutboxContracts.failingCallLeavesNoOutboxRow(outbox, () -> orders.placeOrder(order));

        assertThat(failure)
                .isInstanceOf(DataIntegrityViolationException.class)
                .hasMessageContaining("order_lines_quantity_ck");
        assertThat(jdbc.queryForObject("SELECT COUNT(*) FROM orders WHERE id = ?", Long.class, order.id()))
                .isZero();
    }

    /** Contract 1 (inherited tests): the order service's append rolls back with its business transaction. */
    @Override
    protected void appendToOutbox() {
        orders.placeOrder(sampleOrder("ord-contract-"));
    }

    /** Sumi's outbox contract 2: the dispatcher dies after the send, sends again, and the mail goes out once. */
    @Test
    @org.junit.jupiter.api.Order(3)
    void aDispatcherThatDiesAfterTheSendSendsAgainAndTheMailGoesOutOnce() {
        String id = "ord-redelivery-" + UUID.randomUUID();

        OutboxContracts.redeliveryIsDeduplicated(
                sumi,
                outbox,
                publisher,
                dispatcher.getIfAvailable(),
                () -> orders.placeOrder(sampleOrder(id)),
                MailListener.ID,
                Long::toString,
                Duration.ofSeconds(2));

        assertThat(mailsWithSubject(OrderService.subject(id))).isEqualTo(1);
    }

    /** The listener itself, with the test kit: three copies of one mail request, at once, on three partitions. */
    @Test
    @org.junit.jupiter.api.Order(4)
    void concurrentCopiesOfAMailRequestSendOneMail() {
        String key = "kit-" + UUID.randomUUID();
        String subject = "Copies of " + key;

        sumi.kafka()
                .send(mail.topic(), key, new MailRequest("copies@example.com", subject, "Hello").toJson())
                .times(3)
                .concurrently()
                .acrossPartitions()
                .andAwait();

        assertThat(mailsWithSubject(subject)).isEqualTo(1);
        assertThatSumi()
                .consumer(MailListener.ID)
                .processedOnce(key)
                .hasOutcome(key, DeliveryOutcome.DUPLICATE, 2)
                .hasNoClaimInProgress()
                .hasNothingDeadLettered();
    }

    static Order sampleOrder(String id) {
        String orderId = id.endsWith("-") ? id + UUID.randomUUID() : id;
        return new Order(orderId, "contract@example.com", List.of(new Order.Line("ink-01", "Sumi ink stick", 1, 1890)));
    }

    private long mailsWithSubject(String subject) {
        long count = 0;
        for (MimeMessage message : services.service().getReceivedMessages()) {
            try {
                if (subject.equals(message.getSubject())) {
                    count++;
                }
            } catch (jakarta.mail.MessagingException ex) {
                throw new IllegalStateException(ex);
            }
        }
        return count;
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
