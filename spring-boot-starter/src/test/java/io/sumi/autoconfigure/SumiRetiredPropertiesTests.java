package io.sumi.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Configuration;

/** Removed {@code sumi.*} properties fail start-up naming them; renamed ones still work. */
class SumiRetiredPropertiesTests {

    @Test
    void anApplicationThatStillSetsKafkaBusyMaxWaitFailsStartUpNamingIt() {
        assertThatThrownBy(() -> start("sumi.kafka.busy-max-wait=5s"))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("sumi.kafka.busy-max-wait was removed")
                .hasMessageContaining("sumi.kafka.busy-retry-interval");
    }

    @Test
    void aRemovedPropertyIsFoundUnderItsRelaxedNames() {
        assertThatThrownBy(() -> start("sumi.kafka.busyMaxWait=5s"))
                .hasMessageContaining("sumi.kafka.busy-max-wait was removed");
    }

    @Test
    void anApplicationWithoutRemovedPropertiesStarts() {
        assertThatCode(() -> start("sumi.kafka.busy-retry-interval=2s").close()).doesNotThrowAnyException();
    }

    /**
     * sumi.outbox.kafka.send-timeout used to bound a batch's send; that bound is now
     * sumi.outbox.dispatcher.send-timeout (default 30s, at most half the lease). An application
     * configured the old way (kafka.send-timeout=5s, lease=10s) failed start-up about a 30s send
     * timeout it never set; the old name now sets the dispatcher's bound when that is not set.
     */
    @Test
    void theOldKafkaSendTimeoutStillBoundsTheDispatchersSendWhenTheNewNameIsNotSet() {
        try (ConfigurableApplicationContext context =
                start("sumi.outbox.kafka.send-timeout=5s", "sumi.outbox.dispatcher.lease=10s")) {
            SumiOutboxProperties outbox = context.getBean(SumiOutboxProperties.class);
            assertThat(outbox.dispatcher().sendTimeout()).isEqualTo(Duration.ofSeconds(5));
            assertThat(outbox.kafka().sendTimeout()).isEqualTo(Duration.ofSeconds(5));
        }
    }

    @Test
    void theNewDispatcherSendTimeoutWinsOverTheOldName() {
        try (ConfigurableApplicationContext context =
                start("sumi.outbox.kafka.send-timeout=5s", "sumi.outbox.dispatcher.send-timeout=8s")) {
            SumiOutboxProperties outbox = context.getBean(SumiOutboxProperties.class);
            assertThat(outbox.dispatcher().sendTimeout()).isEqualTo(Duration.ofSeconds(8));
            assertThat(outbox.kafka().sendTimeout()).isEqualTo(Duration.ofSeconds(5));
        }
    }

    @Test
    void theOldKafkaPassthroughNamesStillConfigureTheKafkaPassthrough() {
        try (ConfigurableApplicationContext context =
                start("sumi.passthrough.kafka.enabled=false", "sumi.passthrough.kafka.header-name=x-order-key")) {
            SumiPassthroughAutoConfiguration.KafkaPassthroughProperties passthrough =
                    context.getBean(SumiPassthroughAutoConfiguration.KafkaPassthroughProperties.class);
            assertThat(passthrough.enabled()).isFalse();
            assertThat(passthrough.headerName()).isEqualTo("x-order-key");
            // @ConditionalOnProperty(prefix = "sumi.kafka.passthrough") reads the environment.
            assertThat(context.getEnvironment().getProperty("sumi.kafka.passthrough.enabled"))
                    .isEqualTo("false");
        }
    }

    @Test
    void theNewKafkaPassthroughNameWinsOverTheOldOne() {
        try (ConfigurableApplicationContext context =
                start("sumi.passthrough.kafka.header-name=old-key", "sumi.kafka.passthrough.header-name=new-key")) {
            assertThat(context.getBean(SumiPassthroughAutoConfiguration.KafkaPassthroughProperties.class)
                            .headerName())
                    .isEqualTo("new-key");
        }
    }

    @Test
    void theOldBudgetPauseNamesStillConfigureThePausingUnderTheOneBudgetsRoot() {
        try (ConfigurableApplicationContext context =
                start("sumi.budget-pause.enabled=false", "sumi.budget-pause.check-interval=250ms")) {
            SumiBudgetPauseProperties pause = context.getBean(SumiBudgetPauseProperties.class);
            assertThat(pause.enabled()).isFalse();
            assertThat(pause.checkInterval()).isEqualTo(Duration.ofMillis(250));
            // @ConditionalOnProperty(prefix = "sumi.budgets.pause") reads the environment.
            assertThat(context.getEnvironment().getProperty("sumi.budgets.pause.enabled"))
                    .isEqualTo("false");
            // The pausing settings are no budget.
            assertThat(context.getBean(SumiBudgetProperties.class).budgets()).isEmpty();
        }
    }

    @Test
    void theNewBudgetPauseNameWinsOverTheOldOne() {
        try (ConfigurableApplicationContext context =
                start("sumi.budget-pause.check-interval=250ms", "sumi.budgets.pause.check-interval=2s")) {
            assertThat(context.getBean(SumiBudgetPauseProperties.class).checkInterval())
                    .isEqualTo(Duration.ofSeconds(2));
        }
    }

    @Test
    void aBudgetNamedPauseFailsStartUpSayingTheNameIsTaken() {
        assertThatThrownBy(() -> start("sumi.budgets.pause.limit=10", "sumi.budgets.stripe.limit=5")
                        .close())
                .rootCause()
                .hasMessageContaining("'pause' cannot be a budget's name");
    }

    @Test
    void theBudgetsBesideThePausingSettingsAreBound() {
        try (ConfigurableApplicationContext context =
                start("sumi.budgets.pause.enabled=false", "sumi.budgets.stripe.limit=5")) {
            assertThat(context.getBean(SumiBudgetProperties.class).budgets()).containsOnlyKeys("stripe");
            assertThat(context.getBean(SumiBudgetPauseProperties.class).enabled())
                    .isFalse();
        }
    }

    /** Starts through spring.factories, as an application does, so that the registration is tested too. */
    private static ConfigurableApplicationContext start(String... properties) {
        return new SpringApplicationBuilder(Empty.class)
                .web(WebApplicationType.NONE)
                .properties(properties)
                .run();
    }

    @Configuration(proxyBeanMethods = false)
    @EnableConfigurationProperties({
        SumiOutboxProperties.class,
        SumiPassthroughAutoConfiguration.KafkaPassthroughProperties.class,
        SumiBudgetProperties.class,
        SumiBudgetPauseProperties.class
    })
    static class Empty {}
}
