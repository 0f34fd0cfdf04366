package io.sumi.autoconfigure;

import java.time.Duration;
import org.jspecify.annotations.Nullable;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;

/**
 * Where fleet budgets keep what the fleet spends, under {@code sumi.budgets.store.*} (so
 * {@value SumiBudgetProperties#STORE} is no budget's name, as {@value SumiBudgetProperties#PAUSE}
 * is not).
 *
 * @param type the spend store: {@code jdbc} (tables {@code sumi_budget_*} in the application's
 *     DataSource) or {@code redis} (the application's {@code RedisConnectionFactory}; needs
 *     {@code io.sumi:sumi-store-redis}); by default the ledger's store ({@code sumi.ledger.store}),
 *     so an application whose ledger is on Redis keeps its budgets there too
 * @param prefix the prefix of the Redis spend store's keys (printable ASCII, no braces)
 * @param idleExpiry how long the Redis spend store keeps a budget's spend after its last reservation
 *     or charge (at least two of its windows)
 * @param waitForReplicas after every write of the Redis spend store, {@code WAIT} until this many
 *     replicas have it ({@code 0}: do not wait); a write fewer replicas acknowledged in time fails,
 *     and the budget refuses the call
 * @param waitTimeout how long one {@code WAIT} may take
 * @since 0.1.0
 */
@ConfigurationProperties("sumi.budgets.store")
public record SumiBudgetStoreProperties(
        @Nullable Type type,
        @DefaultValue("sumi:budget") String prefix,
        @DefaultValue("30d") Duration idleExpiry,
        @DefaultValue("0") int waitForReplicas,
        @DefaultValue("1s") Duration waitTimeout) {

    /** The spend stores Sumi ships. */
    public enum Type {
        /** Tables {@code sumi_budget_limit} and {@code sumi_budget_spend} in the application's DataSource. */
        JDBC,
        /** Redis or Valkey (standalone, replicated or Redis Cluster). */
        REDIS
    }
}
