package io.sumi.autoconfigure.monitoring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import brave.handler.MutableSpan;
import brave.handler.SpanHandler;
import brave.propagation.TraceContext;
import io.micrometer.tracing.Span;
import io.micrometer.tracing.Tracer;
import io.sumi.consumer.IdempotencyMode;
import io.sumi.consumer.IdempotentHandler;
import io.sumi.outbox.Outbox;
import io.sumi.outbox.OutboxHeaders;
import io.sumi.outbox.OutboxMessage;
import io.sumi.store.ClaimRequest;
import io.sumi.store.ClaimResult;
import io.sumi.store.ProcessedMessageStore;
import io.sumi.testing.TestDatabase;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.annotation.Bean;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.core.KafkaAdmin;
import org.springframework.kafka.core.KafkaTemplate;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.springframework.transaction.annotation.EnableTransactionManagement;
import org.springframework.transaction.annotation.Transactional;

/**
 * An application as an operator runs it: Actuator with the Prometheus registry over real HTTP,
 * Brave tracing with W3C propagation, the outbox dispatching to an in-process KRaft broker and an
 * {@code @IdempotentHandler} listener consuming with duplicates, a busy key, a failure and a
 * budget. Two promises are checked on it:
 * <ul>
 *   <li>every metric name and label the shipped alert rules and dashboard use is in the real
 *   {@code /actuator/prometheus} scrape ({@link MetricNameChecker});</li>
 *   <li>a message appended to the outbox inside a span is consumed in the same trace: the row
 *   carries {@code traceparent}, the dispatcher sends it, the listener container's observation
 *   continues it, and Sumi's {@code sumi.message.handling} span sits in it with its outcome.</li>
 * </ul>
 * PostgreSQL, in a database of this test's own (no other module's dispatcher takes these rows).
 */
@SpringBootTest(
        classes = ObservabilityIntegrationTests.App.class,
        webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = {
            "spring.main.web-application-type=reactive",
            "management.endpoints.web.exposure.include=prometheus,health",
            "management.tracing.sampling.probability=1.0",
            "spring.kafka.listener.observation-enabled=true",
            "spring.kafka.consumer.auto-offset-reset=earliest",
            "spring.kafka.producer.key-serializer=org.apache.kafka.common.serialization.StringSerializer",
            "spring.kafka.producer.value-serializer=org.apache.kafka.common.serialization.StringSerializer",
            "spring.flyway.locations=classpath:db/sumi/{vendor}",
            "sumi.kafka.busy-retry-interval=100ms",
            "sumi.ledger.metrics.refresh-interval=0s",
            "sumi.outbox.metrics-refresh-interval=0s",
            "sumi.budgets.calls.limit=1000",
            "sumi.budgets.calls.window=1h",
            "sumi.budgets.calls.cost-per-call=1"
        })
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class ObservabilityIntegrationTests {

    static final String DATABASE = "sumi_observability_test";
    static final String CONSUMER = "observed-orders";
    static final String TOPIC = "observed.orders";

    @DynamicPropertySource
    static void database(DynamicPropertyRegistry registry) {
        TestDatabase.POSTGRESQL.registerDataSource(DATABASE, registry::add);
    }

    @LocalServerPort
    int port;

    @Autowired
    Orders orders;

    @Autowired
    Seen seen;

    @Autowired
    Tracer tracer;

    @Autowired
    Spans spans;

    @Autowired
    KafkaTemplate<String, String> kafka;

    @Autowired
    ProcessedMessageStore store;

    @Test
    @Order(1)
    void everyMetricAndLabelOfTheShippedRulesAndDashboardIsInARealScrapeAfterRealTraffic() throws Exception {
        // A busy key: another instance holds its claim, so the listener is told BUSY until it is released.
        ClaimResult holder = store.claim(CONSUMER, new ClaimRequest("busy-key", null), Duration.ofMinutes(5));
        send("busy-key", "busy");
        await().atMost(Duration.ofSeconds(20)).until(() -> scrapeValue("sumi_messages_total", "outcome", "busy") >= 1);
        assertThat(scrapeValue("sumi_ledger_claims_oldest_age_seconds", "consumer", CONSUMER))
                .as("the held claim is a live claim of the consumer")
                .isGreaterThanOrEqualTo(0.0);
        assertThat(store.release(holder.message(), "released by the test")).isTrue();

        orders.place("order-1");
        orders.place("order-2");
        send("dup-key", "first");
        send("dup-key", "second payload"); // a duplicate, with another payload (a fingerprint mismatch)
        send("fail-key", "fail-once");

        await().atMost(Duration.ofSeconds(30))
                .until(() ->
                        seen.handled.containsAll(List.of("order-1", "order-2", "dup-key", "busy-key", "fail-key")));
        await().atMost(Duration.ofSeconds(10))
                .until(() -> scrapeValue("sumi_messages_total", "outcome", "duplicate") >= 1
                        && scrapeValue("sumi_messages_total", "outcome", "failed") >= 1);

        Scrape scrape = Scrape.parse(scrape());
        MetricNameChecker checker = new MetricNameChecker(scrape);
        List<String> problems = new ArrayList<>();
        MonitoringAssets.alertExpressions(MonitoringAssets.load(MonitoringAssets.ALERTS))
                .forEach((alert, expr) -> problems.addAll(checker.problems("alert " + alert, expr)));
        Map<String, String> panels =
                MonitoringAssets.dashboardExpressions(MonitoringAssets.load(MonitoringAssets.DASHBOARD));
        panels.forEach((panel, expr) -> problems.addAll(checker.problems("panel " + panel, expr)));

        assertThat(problems).isEmpty();
        assertThat(panels).hasSizeGreaterThan(20);
        assertThat(scrape.series("sumi_ledger_reconciliation_held"))
                .as("the ledger gauges are registered for the consumer of the application's @IdempotentHandler")
                .contains(Map.of("consumer", CONSUMER));
        assertThat(scrape.series("sumi_ledger_claims_oldest_age_seconds")).contains(Map.of("consumer", CONSUMER));
    }

    @Test
    @Order(2)
    void aMessageAppendedInsideASpanIsHandledInTheSameTrace() {
        Span span = tracer.nextSpan().name("place order").start();
        String traceId;
        try (Tracer.SpanInScope scope = tracer.withSpan(span)) {
            traceId = span.context().traceId();
            orders.place("traced-order");
        } finally {
            span.end();
        }
        orders.place("untraced-order");

        await().atMost(Duration.ofSeconds(20))
                .until(() -> seen.traceIds.containsKey("traced-order") && seen.traceIds.containsKey("untraced-order"));
        ConsumerRecord<String, String> record = seen.records.get("traced-order");
        assertThat(header(record, OutboxHeaders.TRACEPARENT))
                .as("the dispatcher sent the trace context stored with the row")
                .startsWith("00-" + traceId + "-");
        assertThat(seen.traceIds.get("traced-order"))
                .as("the handler ran in the producer's trace")
                .isEqualTo(traceId);
        assertThat(seen.traceIds.get("untraced-order"))
                .as("negative control: a row appended outside any span starts a trace of its own")
                .isNotEqualTo(traceId);
        assertThat(header(seen.records.get("untraced-order"), OutboxHeaders.TRACEPARENT))
                .isNull();

        await().atMost(Duration.ofSeconds(10))
                .untilAsserted(() -> assertThat(spans.inTrace(traceId))
                        .anySatisfy(
                                consumerSpan -> assertThat(consumerSpan.kind()).isEqualTo(brave.Span.Kind.CONSUMER))
                        .anySatisfy(handling -> {
                            assertThat(handling.name()).isEqualTo("sumi " + CONSUMER);
                            assertThat(handling.tags())
                                    .containsEntry("consumer", CONSUMER)
                                    .containsEntry("mode", "lease")
                                    .containsEntry("outcome", "processed");
                        }));
    }

    void send(String key, String payload) throws Exception {
        ProducerRecord<String, String> record = new ProducerRecord<>(TOPIC, key, payload);
        record.headers().add("idempotency-key", key.getBytes(StandardCharsets.UTF_8));
        kafka.send(record).get();
    }

    String scrape() throws Exception {
        HttpResponse<String> response = HttpClient.newHttpClient()
                .send(
                        HttpRequest.newBuilder(URI.create("http://localhost:" + port + "/actuator/prometheus"))
                                .build(),
                        HttpResponse.BodyHandlers.ofString());
        assertThat(response.statusCode()).isEqualTo(200);
        return response.body();
    }

    double scrapeValue(String metric, String label, String value) throws Exception {
        double total = 0;
        for (String line : scrape().split("\n")) {
            if (line.startsWith(metric + "{") && line.contains(label + "=\"" + value + "\"")) {
                total += Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1));
            }
        }
        return total;
    }

    static @Nullable String header(ConsumerRecord<?, ?> record, String name) {
        org.apache.kafka.common.header.Header header = record.headers().lastHeader(name);
        return header == null ? null : new String(header.value(), StandardCharsets.UTF_8);
    }

    /** An order service: the business row and the outbox row in one transaction. */
    static class Orders {

        final JdbcTemplate jdbc;
        final Outbox outbox;

        Orders(JdbcTemplate jdbc, Outbox outbox) {
            this.jdbc = jdbc;
            this.outbox = outbox;
        }

        @Transactional
        public long place(String orderId) {
            jdbc.update("INSERT INTO sumi_observed_orders (id) VALUES (?)", orderId);
            return outbox.append(OutboxMessage.builder(orderId, TOPIC, "{\"order\":\"" + orderId + "\"}")
                    .build());
        }
    }

    /** What the listener saw (a bean of its own: the listener bean is proxied). */
    static class Seen {
        final List<String> handled = new CopyOnWriteArrayList<>();
        final Map<String, ConsumerRecord<String, String>> records = new ConcurrentHashMap<>();
        final Map<String, String> traceIds = new ConcurrentHashMap<>();
        final AtomicBoolean failedOnce = new AtomicBoolean();
    }

    /** The idempotent consumer, bound to a budget; it fails the first delivery of "fail-once". */
    static class Listener {

        private final Seen seen;
        private final Tracer tracer;

        Listener(Seen seen, Tracer tracer) {
            this.seen = seen;
            this.tracer = tracer;
        }

        @KafkaListener(id = CONSUMER, topics = TOPIC, groupId = CONSUMER)
        @IdempotentHandler(mode = IdempotencyMode.LEASE, budget = "calls")
        public void onOrder(ConsumerRecord<String, String> record) {
            if (record.value().equals("fail-once") && seen.failedOnce.compareAndSet(false, true)) {
                throw new IllegalStateException("provider down, once");
            }
            Span current = tracer.currentSpan();
            seen.traceIds.put(
                    record.key(), current == null ? "none" : current.context().traceId());
            seen.records.put(record.key(), record);
            seen.handled.add(record.key());
        }
    }

    /** Brave's finished spans, kept in memory (the in-process reporter of this test). */
    static class Spans extends SpanHandler {

        final List<MutableSpan> finished = new CopyOnWriteArrayList<>();

        @Override
        public boolean end(TraceContext context, MutableSpan span, Cause cause) {
            finished.add(span);
            return true;
        }

        List<MutableSpan> inTrace(String traceId) {
            return finished.stream()
                    .filter(span -> span.traceId().equals(traceId))
                    .toList();
        }
    }

    @SpringBootConfiguration
    @EnableAutoConfiguration
    @EnableTransactionManagement
    static class App {

        @Bean
        Orders orders(JdbcTemplate jdbc, Outbox outbox) {
            jdbc.execute("CREATE TABLE IF NOT EXISTS sumi_observed_orders (id VARCHAR(64) PRIMARY KEY)");
            jdbc.update("DELETE FROM sumi_observed_orders");
            jdbc.update("DELETE FROM outbox");
            jdbc.update("DELETE FROM processed_messages");
            return new Orders(jdbc, outbox);
        }

        @Bean
        Seen seen() {
            return new Seen();
        }

        /**
         * The CDC path's gauges, for the rules that read them: an engine built on this database and
         * not started (the shared server has no logical WAL), so its slot reads as missing.
         */
        @Bean
        io.sumi.outbox.cdc.OutboxCdcMetrics outboxCdcMetrics(
                io.sumi.outbox.OutboxDispatcher dispatcher, org.springframework.core.env.Environment environment) {
            io.sumi.outbox.cdc.OutboxCdc cdc = io.sumi.outbox.cdc.OutboxCdc.builder(
                            dispatcher, environment.getRequiredProperty("spring.datasource.url"))
                    .slotName("sumi_observed")
                    .build();
            return new io.sumi.outbox.cdc.OutboxCdcMetrics(cdc, Duration.ZERO);
        }

        @Bean
        Listener listener(Seen seen, Tracer tracer) {
            return new Listener(seen, tracer);
        }

        @Bean
        Spans spans() {
            return new Spans();
        }

        @Bean
        KafkaAdmin.NewTopics topics() {
            return new KafkaAdmin.NewTopics(new NewTopic(TOPIC, 1, (short) 1));
        }
    }
}
