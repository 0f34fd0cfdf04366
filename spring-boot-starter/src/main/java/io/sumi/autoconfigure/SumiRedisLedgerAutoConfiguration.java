package io.sumi.autoconfigure;

import io.sumi.consumer.IdempotencyMode;
import io.sumi.consumer.IdempotentHandler;
import io.sumi.consumer.TransactionSupport;
import io.sumi.store.ProcessedMessageStore;
import io.sumi.store.redis.RedisProcessedMessageStore;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.SmartInitializingSingleton;
import org.springframework.beans.factory.config.ConfigurableListableBeanFactory;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.data.redis.connection.RedisConnectionFactory;
import org.springframework.util.ClassUtils;

/**
 * The Redis ledger, when {@code io.sumi:sumi-store-redis} is on the class path and
 * {@code sumi.ledger.store=redis}: a {@link RedisProcessedMessageStore} on the application's
 * {@link RedisConnectionFactory} (Boot's, from {@code spring.data.redis.*}), behind the front cache
 * as the JDBC ledger is. Lease mode only: the executor sees no transaction it could write the
 * ledger in ({@link TransactionSupport#none()}), so {@code AUTO} handlers take a lease, and a
 * handler that asks for {@code TRANSACTIONAL} (itself or through {@code sumi.consumer.mode}) fails
 * start-up, named. No pruning job is scheduled: the rows expire ({@code sumi.ledger.retention}).
 *
 * <p>Runs before {@link SumiAutoConfiguration}, whose JDBC ledger, renewal pool and transaction
 * support then back off.
 */
@AutoConfiguration(
        before = SumiAutoConfiguration.class,
        afterName = "org.springframework.boot.data.redis.autoconfigure.DataRedisAutoConfiguration")
@ConditionalOnClass({RedisProcessedMessageStore.class, RedisConnectionFactory.class})
@ConditionalOnProperty(prefix = "sumi.ledger", name = "store", havingValue = "redis")
@EnableConfigurationProperties(SumiProperties.class)
public class SumiRedisLedgerAutoConfiguration {

    @Bean(SumiAutoConfiguration.LEDGER_BEAN_NAME)
    @ConditionalOnMissingBean(ProcessedMessageStore.class)
    ProcessedMessageStore sumiProcessedMessageStore(
            ObjectProvider<RedisConnectionFactory> connectionFactory, SumiProperties properties) {
        RedisConnectionFactory redis = connectionFactory.getIfUnique();
        if (redis == null) {
            throw new IllegalStateException("sumi.ledger.store=redis needs one RedisConnectionFactory bean; there is "
                    + (connectionFactory.stream().findAny().isPresent() ? "more than one" : "none")
                    + " (add spring-boot-starter-data-redis and set spring.data.redis.*, or define one)");
        }
        SumiProperties.Ledger ledger = properties.ledger();
        SumiProperties.RedisLedger settings = ledger.redis();
        RedisProcessedMessageStore.Builder builder = RedisProcessedMessageStore.builder(redis)
                .prefix(settings.prefix())
                .retention(ledger.retention())
                .maxReplySize((int) Math.min(
                        RedisProcessedMessageStore.MAX_REPLY_SIZE,
                        properties.consumer().reply().maxSize().toBytes()));
        if (settings.waitForReplicas() > 0) {
            builder.waitForReplicas(settings.waitForReplicas(), settings.waitTimeout());
        }
        return SumiAutoConfiguration.withCache(builder.build(), ledger);
    }

    /** No transaction can hold a Redis ledger row: {@code AUTO} means lease mode. */
    @Bean
    @ConditionalOnMissingBean
    TransactionSupport sumiTransactionSupport() {
        return TransactionSupport.none();
    }

    /** Fails start-up when a handler would run in transactional mode on the Redis ledger. */
    @Bean
    static SmartInitializingSingleton sumiRedisLedgerHandlerVerifier(ConfigurableListableBeanFactory beanFactory) {
        return () -> refuseTransactionalHandlers(
                new IdempotentHandlerVerifier(beanFactory).handlers(),
                beanFactory.getBean(SumiProperties.class).consumer().mode());
    }

    /**
     * @param defaultMode {@code sumi.consumer.mode}, the mode of handlers that say {@code AUTO}
     * @throws IllegalStateException naming every handler that would run in transactional mode
     */
    static void refuseTransactionalHandlers(Map<Method, Class<?>> handlers, IdempotencyMode defaultMode) {
        List<String> transactional = new ArrayList<>();
        handlers.forEach((method, type) -> {
            IdempotentHandler handler = AnnotatedElementUtils.findMergedAnnotation(method, IdempotentHandler.class);
            IdempotencyMode mode = handler == null ? IdempotencyMode.AUTO : handler.mode();
            if (mode == IdempotencyMode.AUTO) {
                mode = defaultMode;
            }
            if (mode == IdempotencyMode.TRANSACTIONAL) {
                transactional.add(ClassUtils.getQualifiedMethodName(method, type));
            }
        });
        if (!transactional.isEmpty()) {
            throw new IllegalStateException("@IdempotentHandler " + transactional + " runs in transactional mode"
                    + (defaultMode == IdempotencyMode.TRANSACTIONAL ? " (sumi.consumer.mode=TRANSACTIONAL)" : "")
                    + ", which the Redis ledger (sumi.ledger.store=redis) cannot offer: a Redis write cannot commit"
                    + " or roll back with the handler's database transaction. Give them mode = LEASE (AUTO takes a lease"
                    + " on Redis unless sumi.consumer.mode=TRANSACTIONAL), or keep the ledger in the database"
                    + " (sumi.ledger.store=jdbc)");
        }
    }
}
