package io.sumi.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.sumi.consumer.HandlerDefinition;
import io.sumi.consumer.IdempotencyContext;
import io.sumi.consumer.IdempotencyMode;
import io.sumi.consumer.IdempotentExecutor;
import io.sumi.consumer.InboundMessage;
import io.sumi.store.ProcessedMessageStore;
import io.sumi.testing.ForeignTransactionManager;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Primary;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * The starter's {@code TransactionSupport} (issue 8, defect 3): it opens transactions through the
 * manager of the ledger's DataSource even when another manager (Kafka's, in a Kafka-transactions
 * application) is the primary one, and {@code AUTO} takes a lease inside a transaction of that
 * other manager.
 */
class SumiTransactionSupportAutoConfigurationTests {

    @Configuration(proxyBeanMethods = false)
    static class TwoManagers {

        @Bean
        @Primary
        PlatformTransactionManager kafkaTransactionManager() {
            return new ForeignTransactionManager();
        }

        @Bean
        DataSourceTransactionManager transactionManager(DataSource dataSource) {
            return new DataSourceTransactionManager(dataSource);
        }
    }

    private static ApplicationContextRunner runner() {
        return H2Context.runner("sumi_tx")
                .withConfiguration(AutoConfigurations.of(SumiAutoConfiguration.class))
                .withUserConfiguration(TwoManagers.class);
    }

    private static InboundMessage message(String key) {
        return InboundMessage.of("payload", Map.of(HandlerDefinition.IDEMPOTENCY_KEY_HEADER, key));
    }

    @Test
    void transactionalModeOpensItsTransactionOnTheLedgersManagerNotOnThePrimaryOne() {
        runner().run(context -> {
            assertThat(context).hasNotFailed();
            IdempotentExecutor executor = context.getBean(IdempotentExecutor.class);
            HandlerDefinition handler = HandlerDefinition.builder("tx-support")
                    .mode(IdempotencyMode.TRANSACTIONAL)
                    .build();

            assertThatThrownBy(() -> executor.execute(handler, message("k"), () -> {
                        throw new IllegalStateException("handler failed");
                    }))
                    .hasMessage("handler failed");

            assertThat(context.getBean(ProcessedMessageStore.class).find("tx-support", "k"))
                    .as("rolled back with the handler")
                    .isEmpty();
        });
    }

    @Test
    void autoModeInsideATransactionOfAnotherManagerTakesALease() {
        runner().run(context -> {
            IdempotentExecutor executor = context.getBean(IdempotentExecutor.class);
            HandlerDefinition handler = HandlerDefinition.builder("tx-support-auto")
                    .mode(IdempotencyMode.AUTO)
                    .build();
            List<IdempotencyMode> modes = new ArrayList<>();

            new TransactionTemplate(context.getBean("kafkaTransactionManager", PlatformTransactionManager.class))
                    .executeWithoutResult(status -> {
                        try {
                            executor.execute(
                                    handler,
                                    message("k"),
                                    () -> modes.add(IdempotencyContext.current().mode()));
                        } catch (Exception ex) {
                            throw new IllegalStateException(ex);
                        }
                    });

            assertThat(modes).containsExactly(IdempotencyMode.LEASE);
        });
    }
}
