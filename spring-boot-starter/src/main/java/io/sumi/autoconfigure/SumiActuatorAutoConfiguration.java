package io.sumi.autoconfigure;

import io.sumi.autoconfigure.actuate.BudgetRegistryOperations;
import io.sumi.autoconfigure.actuate.SumiBudgetsHealthIndicator;
import io.sumi.autoconfigure.actuate.SumiBudgetsOperations;
import io.sumi.autoconfigure.actuate.SumiEndpoint;
import io.sumi.autoconfigure.actuate.SumiLedgerHealthIndicator;
import io.sumi.autoconfigure.actuate.SumiOutboxHealthIndicator;
import io.sumi.autoconfigure.actuate.internal.OutboxControl;
import io.sumi.autoconfigure.actuate.internal.SumiReadModels;
import io.sumi.budget.BudgetRegistry;
import io.sumi.jdbc.internal.SqlIdentifiers;
import io.sumi.outbox.OutboxTable;
import io.sumi.store.ProcessedMessageStore;
import java.time.Clock;
import java.util.Locale;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.actuate.autoconfigure.endpoint.condition.ConditionalOnAvailableEndpoint;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.AnyNestedCondition;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.health.autoconfigure.contributor.ConditionalOnEnabledHealthIndicator;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.boot.health.contributor.Status;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Conditional;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.env.Environment;

/**
 * The operator's side, with Spring Boot Actuator: the {@code sumi} endpoint (read-only unless the
 * application grants more, see {@link SumiEndpoint}) and the health indicators {@code sumiOutbox},
 * {@code sumiLedger} and {@code sumiBudgets} ({@code management.health.sumi.enabled=false} turns
 * them off). The endpoint's listings read through Spring Data JDBC read models
 * ({@link SumiReadModels}) on the ledger's DataSource.
 *
 * <p>With the Redis ledger ({@code sumi.ledger.store=redis}), with or without a DataSource, the
 * endpoint's {@code ledger} section and the {@code sumiLedger} health read the store itself
 * ({@link ProcessedMessageStore#consumerStats()}: a round trip to Redis, so an unreachable Redis
 * makes {@code sumiLedger} {@code DOWN}); the read models serve only the outbox, when there is a
 * DataSource.
 */
@AutoConfiguration(
        after = {SumiAutoConfiguration.class, SumiOutboxAutoConfiguration.class, SumiBudgetAutoConfiguration.class})
@ConditionalOnClass(name = "org.springframework.boot.actuate.endpoint.annotation.Endpoint")
@Conditional(SumiActuatorAutoConfiguration.OnDataSourceOrLedger.class)
@EnableConfigurationProperties(SumiHealthProperties.class)
public class SumiActuatorAutoConfiguration {

    /** A DataSource (the JDBC ledger, the outbox), or a ledger without one (the Redis ledger). */
    static final class OnDataSourceOrLedger extends AnyNestedCondition {

        OnDataSourceOrLedger() {
            super(ConfigurationPhase.REGISTER_BEAN);
        }

        @ConditionalOnBean(DataSource.class)
        static final class WithDataSource {}

        @ConditionalOnBean(ProcessedMessageStore.class)
        static final class WithLedger {}
    }

    /** Whether the ledger is in the application's database (else on Redis, read through the store SPI). */
    static boolean ledgerInDatabase(Environment environment) {
        return !"redis"
                .equalsIgnoreCase(
                        environment.getProperty("sumi.ledger.store", "jdbc").trim());
    }

    @Bean
    @ConditionalOnMissingBean
    @ConditionalOnBean(DataSource.class)
    SumiReadModels sumiReadModels(
            ObjectProvider<DataSource> dataSource, SumiProperties properties, Environment environment) {
        String outboxTable = SqlIdentifiers.requireTableName(
                environment.getProperty("sumi.outbox.table-name", OutboxTable.DEFAULT_TABLE_NAME),
                "outbox",
                OutboxTable.DEFAULT_TABLE_NAME);
        return new SumiReadModels(dataSource.getObject(), properties.ledger().tableName(), outboxTable);
    }

    @Bean
    @ConditionalOnMissingBean
    @ConditionalOnAvailableEndpoint
    SumiEndpoint sumiEndpoint(
            ObjectProvider<SumiReadModels> readModels,
            ObjectProvider<ProcessedMessageStore> store,
            ObjectProvider<OutboxControl> outbox,
            ObjectProvider<SumiBudgetsOperations> budgets,
            ObjectProvider<Clock> clock,
            Environment environment) {
        SumiReadModels database = readModels.getIfUnique();
        return new SumiEndpoint(
                database,
                database != null && ledgerInDatabase(environment),
                store.getIfUnique(),
                outbox.getIfUnique(),
                budgets.getIfUnique(),
                clock.getIfUnique(Clock::systemUTC));
    }

    /** The budgets' operations for the endpoint, when the application has sumi-budgets. */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(name = "io.sumi.budget.BudgetRegistry")
    static class BudgetsOperationsConfiguration {

        @Bean
        @ConditionalOnMissingBean
        @ConditionalOnBean(BudgetRegistry.class)
        SumiBudgetsOperations sumiBudgetsOperations(BudgetRegistry budgets) {
            return new BudgetRegistryOperations(budgets);
        }
    }

    /** The outbox's operations for the endpoint, when the application has Sumi's outbox. */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(OutboxTable.class)
    static class OutboxControlConfiguration {

        @Bean
        @ConditionalOnMissingBean
        @ConditionalOnBean(OutboxTable.class)
        OutboxControl sumiOutboxControl(OutboxTable table) {
            return new OutboxControl() {
                @Override
                public boolean redrive(long id) {
                    return table.redrive(id);
                }

                @Override
                public int redriveParked(@Nullable String topic) {
                    return table.redriveParked(topic);
                }
            };
        }
    }

    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(HealthIndicator.class)
    @ConditionalOnEnabledHealthIndicator("sumi")
    static class HealthConfiguration {

        static Status attention(SumiHealthProperties properties) {
            return new Status(properties.attentionStatus().trim().toUpperCase(Locale.ROOT));
        }

        @Bean
        @ConditionalOnMissingBean
        SumiLedgerHealthIndicator sumiLedgerHealthIndicator(
                ObjectProvider<SumiReadModels> readModels,
                ObjectProvider<ProcessedMessageStore> store,
                SumiHealthProperties properties,
                Environment environment) {
            SumiReadModels database = readModels.getIfUnique();
            if (database != null && ledgerInDatabase(environment)) {
                return new SumiLedgerHealthIndicator(database, attention(properties));
            }
            // The Redis ledger, or a store of the application's own without a database: its SPI.
            return new SumiLedgerHealthIndicator(
                    store.getObject(), ledgerInDatabase(environment) ? "custom" : "redis", attention(properties));
        }

        @Configuration(proxyBeanMethods = false)
        @ConditionalOnClass(name = "io.sumi.budget.BudgetRegistry")
        static class BudgetsHealthConfiguration {

            @Bean
            @ConditionalOnMissingBean
            @ConditionalOnBean(BudgetRegistry.class)
            SumiBudgetsHealthIndicator sumiBudgetsHealthIndicator(BudgetRegistry budgets) {
                return new SumiBudgetsHealthIndicator(budgets);
            }
        }

        @Configuration(proxyBeanMethods = false)
        @ConditionalOnClass(OutboxTable.class)
        static class OutboxHealthConfiguration {

            @Bean
            @ConditionalOnMissingBean
            @ConditionalOnBean(OutboxTable.class)
            SumiOutboxHealthIndicator sumiOutboxHealthIndicator(OutboxTable table, SumiHealthProperties properties) {
                return new SumiOutboxHealthIndicator(table, properties.outbox().maxDueAge(), attention(properties));
            }
        }
    }
}
