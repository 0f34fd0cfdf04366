package io.sumi.autoconfigure;

import io.sumi.budget.BudgetRegistry;
import io.sumi.budget.SpendStore;
import io.sumi.store.redis.RedisSpendStore;
import java.util.Locale;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionOutcome;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.SpringBootCondition;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.ConditionContext;
import org.springframework.context.annotation.Conditional;
import org.springframework.core.type.AnnotatedTypeMetadata;
import org.springframework.data.redis.connection.RedisConnectionFactory;

/**
 * The fleet budgets' spend store on Redis ({@link RedisSpendStore}), on the application's
 * {@link RedisConnectionFactory}, when sumi-budgets and sumi-store-redis are on the class path and
 * {@code sumi.budgets.store.type=redis}, or that property is not set and the ledger is on Redis
 * ({@code sumi.ledger.store=redis}): a Redis-only fleet shares its budgets where it shares its
 * ledger. Runs before {@link SumiBudgetAutoConfiguration}, whose JDBC spend store then backs off.
 */
@AutoConfiguration(
        before = SumiBudgetAutoConfiguration.class,
        afterName = "org.springframework.boot.data.redis.autoconfigure.DataRedisAutoConfiguration")
@ConditionalOnClass({BudgetRegistry.class, RedisSpendStore.class, RedisConnectionFactory.class})
@Conditional(SumiRedisSpendStoreAutoConfiguration.OnRedisSpendStore.class)
@EnableConfigurationProperties(SumiBudgetStoreProperties.class)
public class SumiRedisSpendStoreAutoConfiguration {

    @Bean
    @ConditionalOnMissingBean
    SpendStore sumiSpendStore(
            ObjectProvider<RedisConnectionFactory> connectionFactory, SumiBudgetStoreProperties properties) {
        RedisConnectionFactory redis = connectionFactory.getIfUnique();
        if (redis == null) {
            throw new IllegalStateException("Sumi's budgets on Redis (sumi.budgets.store.type=redis, or"
                    + " sumi.ledger.store=redis) need one RedisConnectionFactory bean; there is "
                    + (connectionFactory.stream().findAny().isPresent() ? "more than one" : "none")
                    + " (add spring-boot-starter-data-redis and set spring.data.redis.*, or define one)");
        }
        RedisSpendStore.Builder builder =
                RedisSpendStore.builder(redis).prefix(properties.prefix()).idleExpiry(properties.idleExpiry());
        if (properties.waitForReplicas() > 0) {
            builder.waitForReplicas(properties.waitForReplicas(), properties.waitTimeout());
        }
        return builder.build();
    }

    /** {@code sumi.budgets.store.type=redis}, or no type and {@code sumi.ledger.store=redis}. */
    static final class OnRedisSpendStore extends SpringBootCondition {

        @Override
        public ConditionOutcome getMatchOutcome(ConditionContext context, AnnotatedTypeMetadata metadata) {
            String type = context.getEnvironment().getProperty("sumi.budgets.store.type");
            if (type != null && !type.isBlank()) {
                return redis(type)
                        ? ConditionOutcome.match("sumi.budgets.store.type=redis")
                        : ConditionOutcome.noMatch("sumi.budgets.store.type=" + type);
            }
            String ledger = context.getEnvironment().getProperty("sumi.ledger.store", "jdbc");
            return redis(ledger)
                    ? ConditionOutcome.match("sumi.ledger.store=redis, and sumi.budgets.store.type is not set")
                    : ConditionOutcome.noMatch("sumi.budgets.store.type is not set and sumi.ledger.store=" + ledger);
        }

        private static boolean redis(String value) {
            return value.trim().toLowerCase(Locale.ROOT).equals("redis");
        }
    }
}
