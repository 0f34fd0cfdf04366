package io.sumi.consumer.budget.internal;

import io.github.resilience4j.circuitbreaker.CircuitBreaker;
import io.micrometer.core.instrument.MeterRegistry;
import io.sumi.consumer.budget.Budget;
import io.sumi.consumer.budget.BudgetConfig;
import io.sumi.consumer.budget.BudgetRegistry;
import io.sumi.consumer.budget.BudgetStateListener;
import java.time.Clock;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** The {@link BudgetRegistry} behind {@link BudgetRegistry#builder()}. */
public final class DefaultBudgetRegistry implements BudgetRegistry {

    private static final Logger log = LoggerFactory.getLogger(BudgetRegistry.class);

    private final Clock clock;
    private final MeterRegistry meterRegistry;
    private final Map<String, DefaultBudget> budgets = new ConcurrentHashMap<>();
    private final List<BudgetStateListener> listeners = new CopyOnWriteArrayList<>();

    public DefaultBudgetRegistry(Clock clock, MeterRegistry meterRegistry) {
        this.clock = clock;
        this.meterRegistry = meterRegistry;
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
                log.info(
                        "Budget '{}': limit {} per {}, cost per call {}",
                        name,
                        config.limit(),
                        config.window(),
                        config.costPerCall());
                return new DefaultBudget(name, config, clock, this, meterRegistry);
            }
            existing.reconfigure(config);
            return existing;
        });
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
