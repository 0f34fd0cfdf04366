package io.sumi.budget;

import io.github.resilience4j.circuitbreaker.CircuitBreaker;
import io.micrometer.core.instrument.MeterRegistry;
import java.time.Clock;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** The {@link BudgetRegistry} behind {@link BudgetRegistry#builder()}. */
final class DefaultBudgetRegistry implements BudgetRegistry {

    private static final Logger log = LoggerFactory.getLogger(BudgetRegistry.class);

    private final Clock clock;
    private final MeterRegistry meterRegistry;
    private final Map<String, DefaultBudget> budgets = new ConcurrentHashMap<>();
    private final List<BudgetStateListener> listeners = new CopyOnWriteArrayList<>();
    private final @Nullable SpendStore spendStore;

    DefaultBudgetRegistry(Clock clock, MeterRegistry meterRegistry, @Nullable SpendStore spendStore) {
        this.clock = clock;
        this.meterRegistry = meterRegistry;
        this.spendStore = spendStore;
    }

    @Override
    public Budget budget(String name) {
        Budget budget = budgets.get(name);
        if (budget == null) {
            throw new IllegalArgumentException("No budget named '" + name + "' (configure sumi.budgets." + name
                    + ".limit, or register it with BudgetRegistry.update); budgets: " + names());
        }
        return budget;
    }

    @Override
    public Optional<Budget> find(String name) {
        return Optional.ofNullable(budgets.get(name));
    }

    @Override
    public Set<String> names() {
        return Collections.unmodifiableSet(new TreeSet<>(budgets.keySet()));
    }

    @Override
    public Budget update(String name, BudgetConfig config) {
        Objects.requireNonNull(config, "config");
        if (name == null || name.isBlank()) {
            throw new IllegalArgumentException("A budget needs a name");
        }
        return budgets.compute(name, (key, existing) -> {
            if (existing == null) {
                return create(name, config);
            }
            BudgetScope scope = scopeOf(name, config);
            if ((scope == BudgetScope.FLEET) != existing.isFleet()) {
                log.warn(
                        "Budget '{}': its scope cannot change at run time (it stays {}); restart to make it {}",
                        name,
                        existing.isFleet() ? "fleet" : "instance",
                        scope.name().toLowerCase(Locale.ROOT));
            }
            existing.reconfigure(config);
            return existing;
        });
    }

    private DefaultBudget create(String name, BudgetConfig config) {
        BudgetScope scope = scopeOf(name, config);
        SpendStore store = spendStore;
        SpendAccount account;
        if (scope == BudgetScope.FLEET && store != null) {
            // The limit is registered with the store on the first reservation, not here: at start-up
            // the store's tables may not be migrated yet (Flyway runs beside the beans).
            account = new FleetSpendAccount(name, store, clock, meterRegistry);
        } else {
            account = new LocalSpendAccount();
        }
        log.info(
                "Budget '{}': limit {} per {}, cost per call {}, scope {}{}",
                name,
                config.limit(),
                config.window(),
                config.costPerCall(),
                scope.name().toLowerCase(Locale.ROOT),
                scope == BudgetScope.FLEET
                        ? " (fixed windows aligned to the epoch, chunks of " + config.chunkSize() + ")"
                        : " (this JVM alone, sliding window)");
        return new DefaultBudget(name, config, clock, this, meterRegistry, account);
    }

    private BudgetScope scopeOf(String name, BudgetConfig config) {
        BudgetScope scope = config.scope().orElse(spendStore != null ? BudgetScope.FLEET : BudgetScope.INSTANCE);
        if (scope == BudgetScope.FLEET && spendStore == null) {
            throw new IllegalArgumentException("Budget '" + name + "' has scope fleet, but the registry has no"
                    + " SpendStore to share its spend in (with Spring Boot: the ledger's DataSource and the"
                    + " sumi_budget_* tables of sumi-migrations); set scope instance or provide a store");
        }
        return scope;
    }

    /** Gives back what the fleet budgets reserved and did not spend. */
    @Override
    public void close() {
        budgets.values().forEach(DefaultBudget::close);
    }

    @Override
    public void refreshAll() {
        budgets.values().forEach(DefaultBudget::refresh);
    }

    @Override
    public void addListener(BudgetStateListener listener) {
        listeners.add(Objects.requireNonNull(listener, "listener"));
    }

    void fire(Budget budget, CircuitBreaker.State from, CircuitBreaker.State to) {
        for (BudgetStateListener listener : listeners) {
            try {
                listener.onStateTransition(budget, from, to);
            } catch (RuntimeException ex) {
                log.warn("A budget state listener failed on {} -> {} of budget '{}'", from, to, budget.name(), ex);
            }
        }
    }
}
