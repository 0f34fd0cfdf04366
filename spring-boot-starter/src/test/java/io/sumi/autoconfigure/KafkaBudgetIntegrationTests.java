package io.sumi.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.github.resilience4j.circuitbreaker.CircuitBreaker.State;
import io.sumi.budget.BudgetPermit;
import io.sumi.budget.BudgetRegistry;
import io.sumi.consumer.IdempotencyContext;
import io.sumi.consumer.IdempotencyMode;
import io.sumi.consumer.IdempotentHandler;
import io.sumi.kafka.BudgetAwareErrorHandler;
import io.sumi.kafka.BudgetListenerPauser;
import io.sumi.testing.MutableClock;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.AdminClient;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.context.annotation.Bean;
import org.springframework.core.env.ConfigurableEnvironment;
import org.springframework.core.env.MapPropertySource;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.config.KafkaListenerEndpointRegistry;
import org.springframework.kafka.core.KafkaAdmin;
import org.springframework.kafka.listener.DefaultErrorHandler;
import org.springframework.kafka.listener.MessageListenerContainer;
import org.springframework.util.backoff.FixedBackOff;

/**
 * Budgets on Kafka listeners, wired by the starter from {@code sumi.budgets.*}: the call after the
 * limit fails fast, the container is paused with nothing acknowledged or dead-lettered, and once
 * the window rolls (an injected clock, no sleeping) the breaker half-opens, the container resumes
 * and the backlog is processed. In-process KRaft broker, real PostgreSQL.
 */
@SpringBootTest(
        classes = KafkaBudgetIntegrationTests.App.class,
        properties = {
            "spring.kafka.consumer.auto-offset-reset=earliest",
            "spring.kafka.listener.concurrency=1",
            "spring.flyway.locations=classpath:db/sumi/{vendor}",
            "sumi.consumer.lease=30s",
            "sumi.budgets.stripe.limit=3",
            "sumi.budgets.stripe.window=1h",
            "sumi.budgets.stripe.cost-per-call=1",
            "sumi.budgets.llm.limit=1000",
            "sumi.budgets.llm.window=1h",
            "sumi.budgets.llm.cost-per-call=100",
            "sumi.budgets.batches.limit=5",
            "sumi.budgets.batches.window=1h",
            "sumi.budgets.batches.cost-per-call=1",
            "sumi.budgets.pause.check-interval=100ms"
        })
class KafkaBudgetIntegrationTests extends KafkaStarterTestBase {

    /**
     * The budgets are fleet budgets (the default with a DataSource): their spend lives in the
     * database, per window of the injected clock (the store's {@code windowClock}, see
     * {@link App#spendStore}), which starts at the same instant every run. A run therefore starts
     * from empty windows, as a first deployment would.
     */
    @BeforeAll
    static void forgetEarlierRunsSpend() {
        org.springframework.jdbc.core.JdbcTemplate jdbc =
                new org.springframework.jdbc.core.JdbcTemplate(io.sumi.testing.TestDatabase.POSTGRESQL.dataSource());
        for (String table : new String[] {"sumi_budget_spend", "sumi_budget_limit"}) {
            jdbc.update("DELETE FROM " + table + " WHERE budget_name IN ('stripe', 'llm', 'batches')");
        }
    }

    @Autowired
    Provider provider;

    @Autowired
    MutableClock clock;

    @Autowired
    BudgetRegistry budgets;

    @Autowired
    BudgetListenerPauser pauser;

    @Autowired
    KafkaListenerEndpointRegistry containers;

    @Autowired
    KafkaAdmin admin;

    @Autowired
    List<ConsumerRecord<?, ?>> deadLettered;

    @Autowired
    BudgetConfigurationRefresher refresher;

    @Autowired
    ConfigurableEnvironment environment;

    @Autowired
    io.micrometer.core.instrument.MeterRegistry meters;

    static ProducerRecord<String, String> record(String topic, String key, String payload) {
        ProducerRecord<String, String> record = new ProducerRecord<>(topic, key, payload);
        record.headers().add("outbox-id", key.getBytes(StandardCharsets.UTF_8));
        return record;
    }

    long committedOffset(String group, String topic) throws Exception {
        try (AdminClient client = AdminClient.create(admin.getConfigurationProperties())) {
            OffsetAndMetadata offset = client.listConsumerGroupOffsets(group)
                    .partitionsToOffsetAndMetadata()
                    .get(10, TimeUnit.SECONDS)
                    .get(new TopicPartition(topic, 0));
            return offset == null ? 0 : offset.offset();
        }
    }

    @Test
    void anExhaustedBudgetPausesTheContainerUntilTheWindowRollsThenTheBacklogIsProcessed() throws Exception {
        MessageListenerContainer container = containers.getListenerContainer("charges");
        assertThat(((org.springframework.kafka.listener.AbstractMessageListenerContainer<?, ?>) container)
                        .getCommonErrorHandler())
                .isInstanceOf(BudgetAwareErrorHandler.class);
        for (int i = 1; i <= 5; i++) {
            template.send(record("budget.charges", "order-" + i, "charge 10 EUR for order-" + i));
        }
        template.flush();

        // Three calls fit the budget; the fourth fails fast and pauses the container.
        await().atMost(Duration.ofSeconds(30)).until(() -> pauser.isPaused(container) && container.isContainerPaused());
        assertThat(provider.charges).containsExactly("order-1", "order-2", "order-3");
        assertThat(budgets.budget("stripe").circuitBreaker().getState()).isEqualTo(State.OPEN);
        await().atMost(Duration.ofSeconds(10)).until(() -> committedOffset("charges", "budget.charges") == 3);
        // The refused record was neither claimed, nor acknowledged, nor dead-lettered.
        assertThat(store.find("charges", "order-4")).isEmpty();
        assertThat(deadLettered).isEmpty();
        assertThat(pauser.pauses("stripe")).isEqualTo(1);

        // While the budget is exhausted nothing spins: the container stays paused, the provider idle.
        clock.advance(Duration.ofMinutes(59));
        budgets.refreshAll();
        assertThat(container.isPauseRequested()).isTrue();
        assertThat(provider.charges).hasSize(3);
        assertThat(committedOffset("charges", "budget.charges")).isEqualTo(3);

        // The window rolls: the breaker half-opens, the container resumes, order-4 is the probe that
        // closes the breaker, and the backlog is processed.
        clock.advance(Duration.ofMinutes(1));
        await().atMost(Duration.ofSeconds(30)).until(() -> provider.charges.size() == 5);
        assertThat(provider.charges).containsExactly("order-1", "order-2", "order-3", "order-4", "order-5");
        await().atMost(Duration.ofSeconds(10)).until(() -> committedOffset("charges", "budget.charges") == 5);
        assertThat(pauser.resumes("stripe")).isEqualTo(1);
        assertThat(container.isPauseRequested()).isFalse();
        assertThat(budgets.budget("stripe").circuitBreaker().getState()).isEqualTo(State.CLOSED);
        assertThat(budgets.budget("stripe").spent()).isEqualTo(2);
        assertThat(deadLettered).isEmpty();
    }

    @Test
    void theTokensAHandlerRecordsAreWhatTheBudgetCountsAndItCanBeRaisedAtRunTime() throws Exception {
        MessageListenerContainer container = containers.getListenerContainer("summaries");
        for (int i = 1; i <= 4; i++) {
            template.send(record("budget.summaries", "doc-" + i, "400"));
        }
        template.flush();

        // Each call reserves 100 tokens and then records the 400 it used: after three calls 1,200
        // are spent, so the fourth is refused although 4 x 100 would have fit.
        await().atMost(Duration.ofSeconds(30)).until(() -> pauser.isPaused(container));
        assertThat(provider.summaries).hasSize(3);
        assertThat(budgets.budget("llm").spent()).isEqualTo(1_200);
        assertThat(store.find("summaries", "doc-4")).isEmpty();
        assertThat(deadLettered).isEmpty();

        // An operator raises the limit: the budget half-opens at once and the container resumes.
        environment
                .getPropertySources()
                .addFirst(new MapPropertySource("raised", java.util.Map.of("sumi.budgets.llm.limit", "5000")));
        refresher.refresh();
        await().atMost(Duration.ofSeconds(30)).until(() -> provider.summaries.size() == 4);
        assertThat(budgets.budget("llm").config().limit()).isEqualTo(5_000);
        assertThat(budgets.budget("llm").spent()).isEqualTo(1_600);
        await().atMost(Duration.ofSeconds(10)).until(() -> !container.isPauseRequested());
    }

    @Test
    void aRefusedBatchWaitsForItsRetryAtInsteadOfSpinning() throws Exception {
        MessageListenerContainer container = containers.getListenerContainer("batchCharges");
        for (int i = 1; i <= 4; i++) {
            template.send(record("budget.batches", "batch-" + i, "charge"));
        }
        template.flush();
        await().atMost(Duration.ofSeconds(30)).until(() -> provider.batchCharges.size() == 4);

        // Two records in one poll cost 2, one unit is left: the batch is refused, the breaker stays
        // CLOSED (a single call would still fit), and the refusal says when the batch fits.
        container.pause();
        await().atMost(Duration.ofSeconds(10)).until(container::isContainerPaused);
        template.send(record("budget.batches", "batch-5", "charge"));
        template.send(record("budget.batches", "batch-6", "charge"));
        template.flush();
        container.resume();
        await().atMost(Duration.ofSeconds(30)).until(() -> pauser.pauses("batches") >= 1);
        assertThat(budgets.budget("batches").circuitBreaker().getState()).isEqualTo(State.CLOSED);

        // Until then the container stays paused: no redelivery, no second refusal.
        double refused = meters.get("sumi.budget.calls")
                .tag("budget", "batches")
                .tag("result", "rejected")
                .counter()
                .count();
        await().during(Duration.ofMillis(800))
                .atMost(Duration.ofSeconds(5))
                .until(() -> pauser.pauses("batches") == 1
                        && meters.get("sumi.budget.calls")
                                        .tag("budget", "batches")
                                        .tag("result", "rejected")
                                        .counter()
                                        .count()
                                == refused);
        assertThat(pauser.isPaused(container)).isTrue();
        assertThat(provider.batchCharges).hasSize(4);
        assertThat(deadLettered).isEmpty();

        // The window frees: the container resumes and the batch runs once, nothing lost or doubled.
        clock.advance(Duration.ofHours(1));
        await().atMost(Duration.ofSeconds(30)).until(() -> provider.batchCharges.size() == 6);
        assertThat(provider.batchCharges)
                .containsExactlyInAnyOrder("batch-1", "batch-2", "batch-3", "batch-4", "batch-5", "batch-6");
        await().atMost(Duration.ofSeconds(10)).until(() -> committedOffset("batchCharges", "budget.batches") == 6);
        assertThat(pauser.pauses("batches")).isEqualTo(1);
        assertThat(pauser.resumes("batches")).isEqualTo(1);
        assertThat(deadLettered).isEmpty();
    }

    /** A paid provider, faked: it records the idempotency key of every charge and the tokens of every summary. */
    static class Provider {
        final List<String> charges = new CopyOnWriteArrayList<>();
        final List<String> summaries = new CopyOnWriteArrayList<>();
        final List<String> batchCharges = new CopyOnWriteArrayList<>();
    }

    @SpringBootConfiguration
    @EnableAutoConfiguration
    static class App {

        @Bean
        MutableClock clock() {
            return MutableClock.at("2026-03-01T10:00:00Z");
        }

        /**
         * Fleet windows are named by the store's clock, the database's by default: moving the
         * budgets' clock alone only moves the instance's stopwatch past the end it measured, and the
         * database, whose window has not rolled, refuses the probe. So the store names windows by
         * the test's clock too (never done in production).
         */
        @Bean
        io.sumi.budget.SpendStore spendStore(javax.sql.DataSource dataSource, MutableClock clock) {
            return io.sumi.budget.jdbc.JdbcSpendStore.builder(dataSource)
                    .clock(clock)
                    .windowClock(clock)
                    .build();
        }

        @Bean
        io.micrometer.core.instrument.MeterRegistry meterRegistry() {
            return new io.micrometer.core.instrument.simple.SimpleMeterRegistry();
        }

        @Bean
        Provider provider() {
            return new Provider();
        }

        @Bean
        List<ConsumerRecord<?, ?>> deadLettered() {
            return new CopyOnWriteArrayList<>();
        }

        @Bean
        DefaultErrorHandler errorHandler(List<ConsumerRecord<?, ?>> deadLettered) {
            // Any failure other than the budget would be dead-lettered after two retries.
            return new DefaultErrorHandler((record, failure) -> deadLettered.add(record), new FixedBackOff(0, 2));
        }

        @Bean
        KafkaAdmin.NewTopics budgetTopics() {
            return new KafkaAdmin.NewTopics(
                    new NewTopic("budget.charges", 1, (short) 1),
                    new NewTopic("budget.summaries", 1, (short) 1),
                    new NewTopic("budget.batches", 1, (short) 1));
        }

        @Bean
        Listeners budgetListeners(Provider provider, JdbcTemplate jdbc) {
            jdbc.update("DELETE FROM processed_messages WHERE consumer IN ('charges', 'summaries', 'batchCharges')");
            return new Listeners(provider);
        }
    }

    static class Listeners {

        private final Provider provider;

        Listeners(Provider provider) {
            this.provider = provider;
        }

        @KafkaListener(id = "charges", topics = "budget.charges")
        @IdempotentHandler(mode = IdempotencyMode.LEASE, budget = "stripe")
        public void charge(String payload) {
            provider.charges.add(IdempotencyContext.current().key());
        }

        @KafkaListener(id = "summaries", topics = "budget.summaries")
        @IdempotentHandler(mode = IdempotencyMode.LEASE, budget = "llm")
        public void summarize(String tokens) {
            provider.summaries.add(IdempotencyContext.current().key());
            BudgetPermit.current().recordCost(Double.parseDouble(tokens));
        }

        @KafkaListener(id = "batchCharges", topics = "budget.batches", batch = "true")
        @IdempotentHandler(mode = IdempotencyMode.LEASE, budget = "batches")
        public void chargeAll(List<ConsumerRecord<String, String>> records) {
            for (ConsumerRecord<String, String> record : records) {
                provider.batchCharges.add(
                        new String(record.headers().lastHeader("outbox-id").value(), StandardCharsets.UTF_8));
            }
        }
    }
}
