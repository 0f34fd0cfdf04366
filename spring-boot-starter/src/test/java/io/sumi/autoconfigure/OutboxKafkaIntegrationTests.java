package io.sumi.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.sumi.consumer.IdempotencyContext;
import io.sumi.consumer.IdempotencyMode;
import io.sumi.consumer.IdempotentHandler;
import io.sumi.outbox.DispatchOutcome;
import io.sumi.outbox.Outbox;
import io.sumi.outbox.OutboxDispatcher;
import io.sumi.outbox.OutboxMessage;
import io.sumi.outbox.OutboxPublisher;
import io.sumi.outbox.OutboxRecord;
import io.sumi.outbox.OutboxTable;
import io.sumi.outbox.TopicRoutingPublisher;
import io.sumi.outbox.kafka.KafkaOutboxPublisher;
import io.sumi.testing.TestDatabase;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.slf4j.MDC;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.context.annotation.Bean;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.core.KafkaAdmin;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.springframework.transaction.annotation.EnableTransactionManagement;
import org.springframework.transaction.annotation.Transactional;

/**
 * The outbox wired by the starter alone: a {@code @Transactional} service appends, the dispatcher
 * (woken by the commit) publishes to an in-process KRaft broker through the idempotent Kafka
 * producer, and a {@code @KafkaListener} with {@code @IdempotentHandler} consumes it with the
 * {@code outbox-id} as its key. PostgreSQL, in a database of this test's own, so that no other
 * module's dispatcher can take these rows.
 */
@SpringBootTest(
        classes = OutboxKafkaIntegrationTests.App.class,
        properties = {
            "spring.kafka.consumer.auto-offset-reset=earliest",
            "spring.flyway.locations=classpath:db/sumi/{vendor}",
            // Long polls: a row that arrives fast was sent because its commit woke the dispatcher.
            "sumi.outbox.dispatcher.min-poll-interval=30s",
            "sumi.outbox.dispatcher.max-poll-interval=60s",
            "sumi.consumer.lease=30s"
        })
class OutboxKafkaIntegrationTests {

    static final String DATABASE = "sumi_outbox_starter_test";

    @DynamicPropertySource
    static void database(DynamicPropertyRegistry registry) {
        TestDatabase.POSTGRESQL.registerDataSource(DATABASE, registry::add);
    }

    @Autowired
    Orders orders;

    @Autowired
    Inbox mailer;

    @Autowired
    Outbox outbox;

    @Autowired
    OutboxTable table;

    @Autowired
    OutboxPublisher publisher;

    @Autowired
    OutboxDispatcher dispatcher;

    @Autowired
    JdbcTemplate jdbc;

    @Autowired
    MeterRegistry meters;

    @Autowired
    Sequencer sequencer;

    @Autowired
    org.springframework.transaction.PlatformTransactionManager transactionManager;

    @AfterEach
    void clearMdc() {
        MDC.clear();
    }

    @Test
    void theStarterWiresTheKafkaPublisherAndARunningDispatcher() {
        // With Spring AMQP also on the class path the dispatcher's publisher routes per topic; a
        // Kafka publisher beside it keeps every topic that sumi.outbox.rabbit.topics does not list.
        OutboxPublisher forTopic =
                publisher instanceof TopicRoutingPublisher routing ? routing.publisherOf("mail.send") : publisher;
        assertThat(forTopic).isInstanceOf(KafkaOutboxPublisher.class);
        assertThat(dispatcher.isRunning()).isTrue();
    }

    @Test
    void aCommittedAppendReachesKafkaAtOnceKeyedByAggregateWithItsHeadersAndIsConsumedByItsOutboxId() {
        MDC.put("traceId", "4bf92f3577b34da6a3ce929d0e0e4736");
        long id = orders.place("order-1", "a@example.com", false);
        MDC.clear();

        await().atMost(Duration.ofSeconds(10)).until(() -> mailer.received.containsKey("order-1"));
        ConsumerRecord<String, String> record = mailer.received.get("order-1");
        assertThat(record.key()).isEqualTo("order-1");
        assertThat(record.value()).isEqualTo("{\"order\":\"order-1\",\"to\":\"a@example.com\"}");
        assertThat(header(record, "outbox-id")).isEqualTo(Long.toString(id));
        assertThat(header(record, "trace-id")).isEqualTo("4bf92f3577b34da6a3ce929d0e0e4736");
        assertThat(header(record, "schema-version")).isEqualTo("1");
        assertThat(header(record, "tenant-id")).isEqualTo("acme");
        assertThat(mailer.keys.get("order-1"))
                .as("the consumer's idempotency key")
                .isEqualTo(Long.toString(id));

        OutboxRecord row = table.find(id).orElseThrow();
        assertThat(row.outcome()).isEqualTo(DispatchOutcome.SENT);
        assertThat(meters.get("outbox.dispatch.latency")
                        .tag("topic", "mail.send")
                        .timer()
                        .count())
                .isGreaterThanOrEqualTo(1);
    }

    @Test
    void aRowSentAgainIsDedupedByTheConsumer() {
        long id = orders.place("order-2", "b@example.com", false);
        await().atMost(Duration.ofSeconds(10)).until(() -> mailer.mails.get("order-2") != null);

        // What a dispatcher that died before marking the row would do on its next run: send it again.
        assertThat(publisher.publish(List.of(table.find(id).orElseThrow())).failures())
                .isEmpty();

        await().atMost(Duration.ofSeconds(10)).until(() -> duplicates() >= 1);
        assertThat(mailer.mails.get("order-2")).hasValue(1);
        assertThat(mailer.deliveries.get("order-2")).hasValue(2);
    }

    @Test
    void aServiceCallThatFailsAfterTheAppendLeavesNoRowAndSendsNothing() {
        assertThatThrownBy(() -> orders.place("order-3", "c@example.com", true)).hasMessage("payment declined");
        assertThat(jdbc.queryForObject("SELECT COUNT(*) FROM outbox WHERE aggregate_id = 'order-3'", Integer.class))
                .isZero();
        assertThat(jdbc.queryForObject("SELECT COUNT(*) FROM sumi_test_orders WHERE id = 'order-3'", Integer.class))
                .isZero();
        // A later order still goes through, and nothing of order-3 came before it.
        orders.place("order-4", "d@example.com", false);
        await().atMost(Duration.ofSeconds(10)).until(() -> mailer.received.containsKey("order-4"));
        assertThat(mailer.received).doesNotContainKey("order-3");
    }

    @Test
    void pipelinedBatchesKeepEveryAggregatesOrderOnTheBroker() {
        // 300 aggregates x 4 rows in one transaction. The starter's dispatcher pipelines (depth 2
        // by default): while the first batch (200 heads) is on the wire, it claims the other 100.
        int aggregates = 300;
        int perAggregate = 4;
        List<OutboxMessage> messages = new java.util.ArrayList<>();
        for (int seq = 0; seq < perAggregate; seq++) {
            for (int agg = 0; agg < aggregates; agg++) {
                messages.add(OutboxMessage.of("agg-" + agg, "pipeline.order", Integer.toString(seq)));
            }
        }
        new org.springframework.transaction.support.TransactionTemplate(transactionManager)
                .executeWithoutResult(status -> outbox.appendAll(messages));

        await().atMost(Duration.ofSeconds(60)).until(() -> sequencer.firstSeen.size() == aggregates * perAggregate);
        List<Integer> inOrder =
                java.util.stream.IntStream.range(0, perAggregate).boxed().toList();
        assertThat(sequencer.received)
                .hasSize(aggregates)
                .allSatisfy((aggregate, seqs) -> assertThat(seqs).as(aggregate).containsExactlyElementsOf(inOrder));
    }

    @Test
    void anAppendOutsideATransactionFailsClearly() {
        assertThatThrownBy(() -> outbox.append("order-5", "mail.send", "{}"))
                .hasMessageContaining("needs an active Spring-managed transaction");
    }

    double duplicates() {
        io.micrometer.core.instrument.Counter counter = meters.find("sumi.messages")
                .tag("consumer", "outbox-mailer")
                .tag("outcome", "duplicate")
                .counter();
        return counter == null ? 0 : counter.count();
    }

    static String header(ConsumerRecord<?, ?> record, String name) {
        org.apache.kafka.common.header.Header header = record.headers().lastHeader(name);
        return header == null ? null : new String(header.value(), StandardCharsets.UTF_8);
    }

    /** An order service: business row and outbox row in one transaction. */
    static class Orders {

        final JdbcTemplate jdbc;
        final Outbox outbox;

        Orders(JdbcTemplate jdbc, Outbox outbox) {
            this.jdbc = jdbc;
            this.outbox = outbox;
        }

        @Transactional
        public long place(String orderId, String email, boolean failAfterAppend) {
            jdbc.update("INSERT INTO sumi_test_orders (id, email) VALUES (?, ?)", orderId, email);
            long id = outbox.append(OutboxMessage.builder(
                            orderId, "mail.send", "{\"order\":\"" + orderId + "\",\"to\":\"" + email + "\"}")
                    .schemaVersion("1")
                    .tenant("acme")
                    .build());
            if (failAfterAppend) {
                throw new IllegalStateException("payment declined");
            }
            return id;
        }
    }

    /** What the consumer saw (a bean of its own: the listener bean is proxied). */
    static class Inbox {

        final Map<String, ConsumerRecord<String, String>> received = new ConcurrentHashMap<>();
        final Map<String, String> keys = new ConcurrentHashMap<>();
        final Map<String, AtomicInteger> mails = new ConcurrentHashMap<>();
        final Map<String, AtomicInteger> deliveries = new ConcurrentHashMap<>();
    }

    /**
     * Records, per key, the payloads (sequence numbers) of the records of {@code pipeline.order}
     * in the order they arrive, the first delivery of each outbox id only.
     */
    static class Sequencer {

        final Map<String, List<Integer>> received = new ConcurrentHashMap<>();
        final java.util.Set<String> firstSeen = ConcurrentHashMap.newKeySet();

        @KafkaListener(id = "outbox-sequencer", topics = "pipeline.order", groupId = "outbox-sequencer")
        public void onRecord(ConsumerRecord<String, String> record) {
            if (firstSeen.add(header(record, "outbox-id"))) {
                received.computeIfAbsent(
                                record.key(),
                                key -> java.util.Collections.synchronizedList(new java.util.ArrayList<>()))
                        .add(Integer.parseInt(record.value()));
            }
        }
    }

    /** The idempotent consumer of the outbox's messages. */
    static class Mailer {

        private final Inbox inbox;

        Mailer(Inbox inbox) {
            this.inbox = inbox;
        }

        @KafkaListener(id = "outbox-mailer", topics = "mail.send", groupId = "outbox-mailer")
        @IdempotentHandler(mode = IdempotencyMode.LEASE)
        public void onMail(ConsumerRecord<String, String> record) {
            inbox.received.put(record.key(), record);
            inbox.keys.put(record.key(), IdempotencyContext.current().key());
            inbox.mails
                    .computeIfAbsent(record.key(), key -> new AtomicInteger())
                    .incrementAndGet();
        }

        @KafkaListener(id = "outbox-deliveries", topics = "mail.send", groupId = "outbox-deliveries")
        public void countDeliveries(ConsumerRecord<String, String> record) {
            inbox.deliveries
                    .computeIfAbsent(record.key(), key -> new AtomicInteger())
                    .incrementAndGet();
        }
    }

    @SpringBootConfiguration
    @EnableAutoConfiguration
    @EnableTransactionManagement
    static class App {

        @Bean
        MeterRegistry meterRegistry() {
            return new SimpleMeterRegistry();
        }

        @Bean
        Orders orders(JdbcTemplate jdbc, Outbox outbox) {
            jdbc.execute(
                    "CREATE TABLE IF NOT EXISTS sumi_test_orders (id VARCHAR(64) PRIMARY KEY, email VARCHAR(200))");
            jdbc.update("DELETE FROM sumi_test_orders");
            jdbc.update("DELETE FROM outbox");
            jdbc.update("DELETE FROM processed_messages WHERE consumer = 'outbox-mailer'");
            return new Orders(jdbc, outbox);
        }

        @Bean
        Inbox inbox() {
            return new Inbox();
        }

        @Bean
        Mailer mailer(Inbox inbox) {
            return new Mailer(inbox);
        }

        @Bean
        Sequencer sequencer() {
            return new Sequencer();
        }

        @Bean
        KafkaAdmin.NewTopics topics() {
            return new KafkaAdmin.NewTopics(
                    new NewTopic("mail.send", 2, (short) 1), new NewTopic("pipeline.order", 2, (short) 1));
        }
    }
}
