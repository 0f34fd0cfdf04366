package io.sumi.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;

import io.sumi.outbox.Outbox;
import io.sumi.outbox.OutboxDispatcher;
import io.sumi.outbox.OutboxMetrics;
import io.sumi.outbox.OutboxPruner;
import io.sumi.outbox.OutboxPublisher;
import io.sumi.outbox.OutboxTable;
import io.sumi.outbox.PublishResult;
import io.sumi.outbox.kafka.KafkaOutboxPublisher;
import java.time.Duration;
import java.time.Instant;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.kafka.autoconfigure.KafkaAutoConfiguration;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * The starter's outbox wiring, on H2 and without a broker: which beans exist, how properties bind,
 * and when beans back off.
 */
class SumiOutboxAutoConfigurationTests {

    /** A fresh in-memory database per context, so no context's dispatcher sees another's rows. */
    private static ApplicationContextRunner runner() {
        return H2Context.withTransactionManager("sumi_outbox")
                .withConfiguration(
                        AutoConfigurations.of(KafkaAutoConfiguration.class, SumiOutboxAutoConfiguration.class));
    }

    @Test
    void withKafkaTheOutboxGetsAKafkaPublisherAndADispatcher() {
        runner().withPropertyValues(
                        "spring.kafka.bootstrap-servers=localhost:1",
                        "sumi.outbox.dispatcher.min-poll-interval=1h",
                        "sumi.outbox.dispatcher.max-poll-interval=1h")
                .run(context -> {
                    assertThat(context).hasNotFailed();
                    assertThat(context)
                            .hasSingleBean(OutboxTable.class)
                            .hasSingleBean(Outbox.class)
                            .hasSingleBean(OutboxPruner.class)
                            .hasSingleBean(OutboxMetrics.class)
                            .hasSingleBean(OutboxDispatcher.class);
                    assertThat(context.getBean(OutboxPublisher.class)).isInstanceOf(KafkaOutboxPublisher.class);
                    assertThat(context.getBean(OutboxDispatcher.class).isRunning())
                            .isTrue();
                    assertThat(context).hasSingleBean(SumiOutboxAutoConfiguration.OutboxPruningScheduler.class);
                });
    }

    @Test
    void withoutAPublisherThereIsNoDispatcherButAppendsStillWork() {
        runner().withClassLoader(new FilteredClassLoader("org.apache.kafka.clients.producer"))
                .run(context -> {
                    assertThat(context).hasNotFailed();
                    assertThat(context)
                            .hasSingleBean(Outbox.class)
                            .doesNotHaveBean(OutboxPublisher.class)
                            .doesNotHaveBean(OutboxDispatcher.class);
                    TransactionTemplate tx = new TransactionTemplate(context.getBean(PlatformTransactionManager.class));
                    long id = tx.execute(status -> context.getBean(Outbox.class).append("order-1", "mail.send", "{}"));
                    assertThat(context.getBean(OutboxTable.class).find(id))
                            .get()
                            .satisfies(row -> assertThat(row.pending()).isTrue());
                });
    }

    @Test
    void propertiesBind() {
        runner().withPropertyValues(
                        "sumi.outbox.dispatcher.enabled=false",
                        "sumi.outbox.table-name=app.outbox",
                        "sumi.outbox.retention=7d",
                        "sumi.outbox.dispatcher.batch-size=50",
                        "sumi.outbox.dispatcher.ordered-topics=payments,refunds",
                        "sumi.outbox.dispatcher.shadow-topics=mail.send",
                        "sumi.outbox.dispatcher.cutoff=2026-01-01T00:00:00Z",
                        "sumi.outbox.dispatcher.backoff.initial=10s",
                        "sumi.outbox.dispatcher.max-attempts=5",
                        "sumi.outbox.pruning.enabled=false")
                .run(context -> {
                    SumiOutboxProperties properties = context.getBean(SumiOutboxProperties.class);
                    assertThat(properties.tableName()).isEqualTo("app.outbox");
                    assertThat(properties.retention()).isEqualTo(Duration.ofDays(7));
                    assertThat(properties.dispatcher().batchSize()).isEqualTo(50);
                    assertThat(properties.dispatcher().orderedTopics()).containsExactly("payments", "refunds");
                    assertThat(properties.dispatcher().shadowTopics()).containsExactly("mail.send");
                    assertThat(properties.dispatcher().cutoff()).isEqualTo(Instant.parse("2026-01-01T00:00:00Z"));
                    assertThat(properties.dispatcher().backoff().toBackoff().delay(2, 0))
                            .isEqualTo(Duration.ofSeconds(20));
                    assertThat(properties.dispatcher().maxAttempts()).isEqualTo(5);
                    assertThat(context.getBean(OutboxTable.class).tableName()).isEqualTo("app.outbox");
                    assertThat(context.getBean(OutboxPruner.class).retention()).isEqualTo(Duration.ofDays(7));
                    assertThat(context).doesNotHaveBean(SumiOutboxAutoConfiguration.OutboxPruningScheduler.class);
                });
    }

    @Test
    void theDefaultsAreTheDocumentedOnes() {
        runner().run(context -> {
            SumiOutboxProperties properties = context.getBean(SumiOutboxProperties.class);
            assertThat(properties.enabled()).isTrue();
            assertThat(properties.tableName()).isEqualTo(OutboxTable.DEFAULT_TABLE_NAME);
            assertThat(properties.retention()).isEqualTo(OutboxPruner.DEFAULT_RETENTION);
            SumiOutboxProperties.Dispatcher dispatcher = properties.dispatcher();
            assertThat(dispatcher.enabled()).isTrue();
            assertThat(dispatcher.batchSize()).isEqualTo(OutboxDispatcher.DEFAULT_BATCH_SIZE);
            assertThat(dispatcher.lease()).isEqualTo(OutboxDispatcher.DEFAULT_LEASE);
            assertThat(dispatcher.minPollInterval()).isEqualTo(OutboxDispatcher.DEFAULT_MIN_POLL_INTERVAL);
            assertThat(dispatcher.maxPollInterval()).isEqualTo(OutboxDispatcher.DEFAULT_MAX_POLL_INTERVAL);
            assertThat(dispatcher.maxAttempts()).isEqualTo(OutboxDispatcher.DEFAULT_MAX_ATTEMPTS);
            assertThat(dispatcher.backoff().toBackoff()).isEqualTo(io.sumi.outbox.OutboxBackoff.DEFAULT);
            assertThat(dispatcher.orderedTopics()).containsExactly(OutboxDispatcher.ALL_TOPICS);
            assertThat(dispatcher.shadowMode()).isFalse();
            assertThat(dispatcher.shadowTopics()).isEmpty();
            assertThat(dispatcher.cutoff()).isNull();
            assertThat(dispatcher.sendTimeout()).isEqualTo(OutboxDispatcher.DEFAULT_SEND_TIMEOUT);
            assertThat(properties.kafka().sendTimeout()).isNull();
            assertThat(properties.kafka().sendTimeoutOr(dispatcher.sendTimeout()))
                    .isEqualTo(KafkaOutboxPublisher.DEFAULT_SEND_TIMEOUT);
        });
    }

    @Test
    void theDispatcherCanBeTurnedOffPerInstance() {
        runner().withUserConfiguration(OwnPublisher.class)
                .withPropertyValues("sumi.outbox.dispatcher.enabled=false")
                .run(context -> {
                    assertThat(context).hasSingleBean(Outbox.class).doesNotHaveBean(OutboxDispatcher.class);
                });
        runner().withUserConfiguration(OwnPublisher.class)
                .withPropertyValues(
                        "sumi.outbox.dispatcher.min-poll-interval=1h", "sumi.outbox.dispatcher.max-poll-interval=1h")
                .run(context -> {
                    assertThat(context).hasSingleBean(OutboxDispatcher.class);
                    assertThat(context.getBean(OutboxPublisher.class)).isSameAs(OwnPublisher.PUBLISHER);
                });
    }

    @Test
    void theWholeOutboxCanBeTurnedOff() {
        runner().withPropertyValues("sumi.outbox.enabled=false").run(context -> {
            assertThat(context).hasNotFailed();
            assertThat(context)
                    .doesNotHaveBean(OutboxTable.class)
                    .doesNotHaveBean(Outbox.class)
                    .doesNotHaveBean(OutboxDispatcher.class);
        });
    }

    @Test
    void backsOffForTheApplicationsOwnBeans() {
        runner().withUserConfiguration(OwnOutbox.class)
                .withPropertyValues("sumi.outbox.dispatcher.enabled=false")
                .run(context -> {
                    assertThat(context.getBean(Outbox.class)).isSameAs(context.getBean("myOutbox"));
                    assertThat(context).hasSingleBean(Outbox.class);
                });
    }

    @Test
    void aSendTimeoutAboveHalfTheLeaseIsRejectedAtStartUp() {
        runner().withPropertyValues(
                        "spring.kafka.bootstrap-servers=localhost:1", "sumi.outbox.dispatcher.send-timeout=61s")
                .run(context -> assertThat(context)
                        .hasFailed()
                        .getFailure()
                        .rootCause()
                        .hasMessageContaining("must be at most half the lease")
                        .hasMessageContaining("sumi.outbox.dispatcher.send-timeout"));
        runner().withPropertyValues("spring.kafka.bootstrap-servers=localhost:1", "sumi.outbox.kafka.send-timeout=5m")
                .run(context -> assertThat(context)
                        .hasFailed()
                        .getFailure()
                        .rootCause()
                        .hasMessageContaining("must not exceed sumi.outbox.dispatcher.send-timeout"));
        runner().withPropertyValues(
                        "spring.kafka.bootstrap-servers=localhost:1",
                        "sumi.outbox.dispatcher.lease=10s",
                        "sumi.outbox.dispatcher.send-timeout=5s")
                .run(context -> {
                    assertThat(context).hasNotFailed();
                    assertThat(context.getBean(KafkaOutboxPublisher.class).sendTimeout())
                            .isEqualTo(Duration.ofSeconds(5));
                });
    }

    @Configuration(proxyBeanMethods = false)
    static class OwnPublisher {

        static final OutboxPublisher PUBLISHER = records -> PublishResult.allSent();

        @Bean
        OutboxPublisher myPublisher() {
            return PUBLISHER;
        }
    }

    @Configuration(proxyBeanMethods = false)
    static class OwnOutbox {

        @Bean
        Outbox myOutbox(OutboxTable table) {
            return Outbox.builder(table).build();
        }
    }
}
