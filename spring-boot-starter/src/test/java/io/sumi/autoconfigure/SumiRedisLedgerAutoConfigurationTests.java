package io.sumi.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;

import io.sumi.consumer.HandlerDefinition;
import io.sumi.consumer.IdempotencyMode;
import io.sumi.consumer.IdempotentExecutor;
import io.sumi.consumer.IdempotentHandler;
import io.sumi.consumer.InboundMessage;
import io.sumi.consumer.TransactionSupport;
import io.sumi.store.CachingProcessedMessageStore;
import io.sumi.store.ClaimOutcome;
import io.sumi.store.ClaimRequest;
import io.sumi.store.ProcessedMessageStore;
import io.sumi.store.jdbc.JdbcProcessedMessageStore;
import io.sumi.store.redis.RedisProcessedMessageStore;
import java.time.Duration;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.data.redis.autoconfigure.DataRedisAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.data.redis.connection.RedisConnection;
import org.springframework.data.redis.connection.RedisConnectionFactory;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * {@code sumi.ledger.store=redis}: the Redis ledger on Boot's {@code RedisConnectionFactory}
 * (the machine's Redis on 127.0.0.1:6379, which {@code .ci/run} starts), lease mode only, no pruning job.
 */
class SumiRedisLedgerAutoConfigurationTests {

    /** An application with a DataSource and a transaction manager beside its Redis: the ledger still goes to Redis. */
    private static ApplicationContextRunner runner() {
        return H2Context.withTransactionManager("sumi_redis")
                .withPropertyValues(
                        "spring.data.redis.host=127.0.0.1",
                        "spring.data.redis.port=6379",
                        "sumi.ledger.redis.prefix=sumi-starter-test:ledger")
                .withConfiguration(AutoConfigurations.of(
                        DataRedisAutoConfiguration.class,
                        SumiRedisLedgerAutoConfiguration.class,
                        SumiAutoConfiguration.class));
    }

    private static void requireRedis(RedisConnectionFactory factory) {
        try (RedisConnection connection = factory.getConnection()) {
            connection.ping();
        } catch (RuntimeException ex) {
            throw new IllegalStateException("No Redis on 127.0.0.1:6379 (.ci/run starts one)", ex);
        }
    }

    @Test
    void withoutThePropertyTheLedgerStaysInTheDataSource() {
        runner().run(context -> {
            assertThat(context).hasNotFailed();
            assertThat(((CachingProcessedMessageStore) context.getBean(ProcessedMessageStore.class)).delegate())
                    .isInstanceOf(JdbcProcessedMessageStore.class);
            assertThat(context).hasSingleBean(LedgerPruningScheduler.class);
        });
    }

    @Test
    void theRedisLedgerLeasesAutoHandlersEvenInsideADatabaseTransactionAndSchedulesNoPruning() {
        runner().withPropertyValues("sumi.ledger.store=redis").run(context -> {
            assertThat(context).hasNotFailed();
            requireRedis(context.getBean(RedisConnectionFactory.class));
            ProcessedMessageStore store = context.getBean(ProcessedMessageStore.class);
            assertThat(((CachingProcessedMessageStore) store).delegate())
                    .isInstanceOf(RedisProcessedMessageStore.class);
            assertThat(context).doesNotHaveBean(LedgerPruningScheduler.class);
            assertThat(context).doesNotHaveBean(LeaseRenewalPool.class);
            assertThat(context.getBean(TransactionSupport.class).isTransactionActive())
                    .isFalse();

            IdempotentExecutor executor = context.getBean(IdempotentExecutor.class);
            String consumer = "starter-redis-" + UUID.randomUUID();
            HandlerDefinition handler = HandlerDefinition.builder(consumer).build(); // AUTO
            AtomicInteger runs = new AtomicInteger();
            InboundMessage message =
                    InboundMessage.of("payload", Map.of(HandlerDefinition.IDEMPOTENCY_KEY_HEADER, "k1"));
            TransactionTemplate transaction =
                    new TransactionTemplate(context.getBean(PlatformTransactionManager.class));
            transaction.executeWithoutResult(status -> {
                try {
                    executor.execute(handler, message, runs::incrementAndGet);
                } catch (Exception ex) {
                    throw new IllegalStateException(ex);
                }
            });
            executor.execute(handler, message, runs::incrementAndGet);

            assertThat(runs).as("the redelivery is a duplicate").hasValue(1);
            RedisProcessedMessageStore redis = RedisProcessedMessageStore.builder(
                            context.getBean(RedisConnectionFactory.class))
                    .prefix("sumi-starter-test:ledger")
                    .build();
            assertThat(redis.find(consumer, "k1"))
                    .get()
                    .satisfies(row -> assertThat(row.isCompleted()).isTrue());
            assertThat(redis.claim(consumer, new ClaimRequest("k1", null), Duration.ofSeconds(30))
                            .outcome())
                    .isEqualTo(ClaimOutcome.DUPLICATE);
        });
    }

    @Configuration(proxyBeanMethods = false)
    static class TransactionalHandler {
        @Bean
        Handlers handlers() {
            return new Handlers();
        }
    }

    static class Handlers {
        @IdempotentHandler(mode = IdempotencyMode.TRANSACTIONAL)
        public void charge(String payload) {}

        @IdempotentHandler
        public void mail(String payload) {}
    }

    @Test
    void aTransactionalHandlerFailsStartUpNamingTheHandler() {
        runner().withPropertyValues("sumi.ledger.store=redis")
                .withUserConfiguration(TransactionalHandler.class)
                .run(context -> assertThat(context)
                        .getFailure()
                        .isInstanceOf(IllegalStateException.class)
                        .hasMessageContaining("Handlers.charge")
                        .hasMessageNotContaining("Handlers.mail")
                        .hasMessageContaining("transactional mode")
                        .hasMessageContaining("sumi.ledger.store=redis"));
    }

    @Test
    void withTransactionalAsTheDefaultModeEveryAutoHandlerIsNamed() {
        runner().withPropertyValues("sumi.ledger.store=redis", "sumi.consumer.mode=TRANSACTIONAL")
                .withUserConfiguration(TransactionalHandler.class)
                .run(context -> assertThat(context)
                        .getFailure()
                        .hasMessageContaining("Handlers.charge")
                        .hasMessageContaining("Handlers.mail")
                        .hasMessageContaining("sumi.consumer.mode=TRANSACTIONAL"));
    }

    @Test
    void theRedisLedgerWithoutARedisConnectionFactoryFailsStartUpClearly() {
        new ApplicationContextRunner()
                .withPropertyValues("sumi.ledger.store=redis")
                .withConfiguration(
                        AutoConfigurations.of(SumiRedisLedgerAutoConfiguration.class, SumiAutoConfiguration.class))
                .run(context ->
                        assertThat(context).getFailure().rootCause().hasMessageContaining("RedisConnectionFactory"));
    }
}
