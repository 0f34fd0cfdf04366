package io.sumi.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;

import io.sumi.budget.BudgetRegistry;
import io.sumi.jms.JmsBudgetListenerStopper;
import io.sumi.kafka.BudgetListenerPauser;
import io.sumi.rabbit.RabbitBudgetListenerStopper;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * The JMS and RabbitMQ budget stoppers, one set of conditions ({@link BudgetStoppers}) for both:
 * each binder gets its own stopper (neither backs off for the other's, nor for Kafka's pauser),
 * only when budgets exist and pausing is on, and none where the application defines its own.
 */
class BudgetStoppersTests {

    private static ApplicationContextRunner runner(Class<?>... autoConfigurations) {
        return H2Context.withTransactionManager("sumi_budget_stoppers")
                .withPropertyValues("sumi.budgets.stripe.limit=3", "sumi.outbox.dispatcher.enabled=false")
                .withConfiguration(AutoConfigurations.of(
                        SumiAutoConfiguration.class, SumiRabbitAutoConfiguration.class, SumiJmsAutoConfiguration.class))
                .withConfiguration(AutoConfigurations.of(autoConfigurations));
    }

    private static ApplicationContextRunner withBudgets() {
        return runner(SumiBudgetAutoConfiguration.class);
    }

    @Test
    void withBudgetsEachBinderHasItsOwnStopper() {
        withBudgets().run(context -> {
            assertThat(context).hasNotFailed();
            assertThat(context).hasSingleBean(BudgetListenerPauser.class);
            assertThat(context)
                    .getBean("sumiJmsBudgetListenerStopper")
                    .isExactlyInstanceOf(JmsBudgetListenerStopper.class);
            assertThat(context)
                    .getBean("sumiRabbitBudgetListenerStopper")
                    .isExactlyInstanceOf(RabbitBudgetListenerStopper.class);
        });
    }

    @Test
    void noStopperWhenPausingIsOff() {
        withBudgets().withPropertyValues("sumi.budgets.pause.enabled=false").run(context -> {
            assertThat(context).hasNotFailed();
            assertThat(context).hasSingleBean(BudgetRegistry.class);
            assertThat(context).doesNotHaveBean(JmsBudgetListenerStopper.class);
            assertThat(context).doesNotHaveBean(RabbitBudgetListenerStopper.class);
        });
    }

    @Test
    void noStopperWithoutABudgetRegistry() {
        runner().run(context -> {
            assertThat(context).hasNotFailed();
            assertThat(context).doesNotHaveBean(BudgetRegistry.class);
            assertThat(context).doesNotHaveBean(JmsBudgetListenerStopper.class);
            assertThat(context).doesNotHaveBean(RabbitBudgetListenerStopper.class);
        });
    }

    @Test
    void theApplicationsOwnStopperReplacesThatBindersOnly() {
        withBudgets().withUserConfiguration(OwnJmsStopper.class).run(context -> {
            assertThat(context).hasNotFailed();
            assertThat(context).hasSingleBean(JmsBudgetListenerStopper.class);
            assertThat(context).hasBean("ownJmsStopper").doesNotHaveBean("sumiJmsBudgetListenerStopper");
            assertThat(context).hasBean("sumiRabbitBudgetListenerStopper");
        });
    }

    @Configuration(proxyBeanMethods = false)
    static class OwnJmsStopper {

        @Bean
        JmsBudgetListenerStopper ownJmsStopper(BudgetRegistry budgets) {
            return new JmsBudgetListenerStopper(budgets, Duration.ofSeconds(5), null);
        }
    }
}
