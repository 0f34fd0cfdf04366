package io.sumi.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;

import io.sumi.consumer.IdempotentExecutor;
import io.sumi.consumer.IdempotentHandler;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.BeanCreationException;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * sumi-budgets is optional for the starter: without it on the class path, the budgets'
 * auto-configuration and every budget bean of the binders' and the actuator's stay away, the rest of
 * Sumi starts, and a handler that names a budget fails start-up instead of running unbudgeted.
 */
class SumiWithoutBudgetsTests {

    private static ApplicationContextRunner runner() {
        return H2Context.withTransactionManager("sumi_no_budgets")
                .withClassLoader(new FilteredClassLoader("io.sumi.budget"))
                .withPropertyValues("sumi.budgets.stripe.limit=3", "sumi.outbox.dispatcher.enabled=false")
                .withConfiguration(AutoConfigurations.of(
                        SumiAutoConfiguration.class,
                        SumiBudgetAutoConfiguration.class,
                        SumiRabbitAutoConfiguration.class,
                        SumiJmsAutoConfiguration.class,
                        SumiActuatorAutoConfiguration.class));
    }

    @Test
    void sumiStartsWithoutBudgetsAndDefinesNoBudgetBean() {
        runner().run(context -> {
            assertThat(context).hasNotFailed();
            assertThat(context).hasSingleBean(IdempotentExecutor.class);
            assertThat(context).doesNotHaveBean("sumiBudgetRegistry");
            assertThat(context).doesNotHaveBean("sumiSpendStore");
            assertThat(context).doesNotHaveBean("sumiRabbitBudgetListenerStopper");
            assertThat(context).doesNotHaveBean("sumiJmsBudgetListenerStopper");
            assertThat(context).doesNotHaveBean("sumiBudgetsOperations");
            assertThat(context).doesNotHaveBean("sumiBudgetsHealthIndicator");
            // The executor is Sumi's own, not decorated by budgets.
            assertThat(context.getBean(IdempotentExecutor.class).getClass().getName())
                    .doesNotContain("Budget");
        });
    }

    @Test
    void aHandlerThatNamesABudgetFailsStartUpAndSaysWhichModuleToAdd() {
        runner().withUserConfiguration(BudgetedApp.class).run(context -> {
            assertThat(context).hasFailed();
            assertThat(context.getStartupFailure())
                    .isInstanceOf(BeanCreationException.class)
                    .hasMessageContaining("names budget 'stripe'")
                    .hasMessageContaining("io.sumi:sumi-budgets");
        });
    }

    @Configuration(proxyBeanMethods = false)
    static class BudgetedApp {

        @Bean
        Charges charges() {
            return new Charges();
        }
    }

    static class Charges {

        @IdempotentHandler(consumer = "charges", budget = "stripe")
        public void charge(String order) {}
    }
}
