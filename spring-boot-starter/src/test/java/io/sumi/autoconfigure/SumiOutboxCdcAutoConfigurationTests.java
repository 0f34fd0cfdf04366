package io.sumi.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;

import io.sumi.outbox.OutboxDispatcher;
import io.sumi.outbox.cdc.CdcSetupException;
import io.sumi.outbox.cdc.OutboxCdc;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.kafka.autoconfigure.KafkaAutoConfiguration;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.mock.env.MockEnvironment;

/** The starter's CDC wiring: off by default, backs off without the module, fails clearly on a server without logical WAL. */
class SumiOutboxCdcAutoConfigurationTests {

    private static ApplicationContextRunner runner() {
        return H2Context.withTransactionManager("sumi_outbox_cdc")
                .withPropertyValues(
                        "spring.kafka.bootstrap-servers=localhost:1",
                        "sumi.outbox.dispatcher.min-poll-interval=1h",
                        "sumi.outbox.dispatcher.max-poll-interval=1h")
                .withConfiguration(AutoConfigurations.of(
                        KafkaAutoConfiguration.class,
                        SumiOutboxAutoConfiguration.class,
                        SumiOutboxCdcAutoConfiguration.class));
    }

    @Test
    void offByDefault() {
        runner().run(context -> {
            assertThat(context).hasNotFailed();
            assertThat(context).hasSingleBean(OutboxDispatcher.class).doesNotHaveBean(OutboxCdc.class);
        });
    }

    @Test
    void backsOffWithoutTheCdcModule() {
        runner().withClassLoader(new FilteredClassLoader("io.sumi.outbox.cdc"))
                .withPropertyValues("sumi.outbox.cdc.enabled=true")
                .run(context -> {
                    assertThat(context).hasNotFailed();
                    assertThat(context).hasSingleBean(OutboxDispatcher.class);
                    assertThat(OutboxCdcMode.pollingInterval(context.getEnvironment(), context.getClassLoader()))
                            .as("no CDC class: polling as usual")
                            .isNull();
                });
    }

    @Test
    void onAServerWithoutLogicalWalTheStartFailsSayingSo() {
        // The machine's shared PostgreSQL runs wal_level = replica.
        runner().withPropertyValues(
                        "sumi.outbox.cdc.enabled=true",
                        "sumi.outbox.cdc.url="
                                + System.getenv()
                                        .getOrDefault(
                                                "SUMI_CDC_REPLICA_PG_URL", "jdbc:postgresql://127.0.0.1:5432/postgres"),
                        "sumi.outbox.cdc.username=postgres")
                .run(context -> {
                    assertThat(context).hasFailed();
                    assertThat(context.getStartupFailure())
                            .rootCause()
                            .isInstanceOf(CdcSetupException.class)
                            .hasMessageContaining("wal_level = logical");
                });
    }

    @Test
    void underCdcPollingTakesTheLongInterval() {
        ClassLoader loader = getClass().getClassLoader();
        assertThat(OutboxCdcMode.pollingInterval(
                        new MockEnvironment()
                                .withProperty("sumi.outbox.cdc.enabled", "true")
                                .withProperty("sumi.outbox.cdc.polling-interval", "45s"),
                        loader))
                .hasSeconds(45);
        assertThat(OutboxCdcMode.pollingInterval(
                        new MockEnvironment().withProperty("sumi.outbox.cdc.enabled", "true"), loader))
                .hasSeconds(30);
        assertThat(OutboxCdcMode.pollingInterval(new MockEnvironment(), loader)).isNull();
        assertThat(OutboxCdcMode.pollDelay(
                        new MockEnvironment().withProperty("sumi.outbox.cdc.enabled", "true"), loader))
                .hasSeconds(10);
        assertThat(OutboxCdcMode.pollDelay(new MockEnvironment(), loader)).isZero();
    }
}
