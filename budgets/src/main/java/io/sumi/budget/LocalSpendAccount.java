package io.sumi.budget;

import java.time.Instant;
import org.jspecify.annotations.Nullable;

/** Spend counted in this JVM over a sliding window ({@code scope: instance}). */
final class LocalSpendAccount implements SpendAccount {

    private final SpendWindow spend = new SpendWindow();

    @Override
    public Attempt tryReserve(Instant now, double cost, BudgetConfig config) {
        if (spend.total(now, config.window()) + cost > config.limit()) {
            return Attempt.REFUSED;
        }
        return Attempt.granted(spend.reserve(now, cost));
    }

    @Override
    public void setCost(Reservation reservation, double cost, Instant now, BudgetConfig config) {
        spend.setCost((SpendWindow.Entry) reservation, cost);
    }

    @Override
    public void release(Reservation reservation, Instant now, BudgetConfig config) {
        spend.remove((SpendWindow.Entry) reservation);
    }

    @Override
    public double total(Instant now, BudgetConfig config) {
        return spend.total(now, config.window());
    }

    @Override
    public boolean full(Instant now, BudgetConfig config) {
        return SpendWindow.exceeds(spend.total(now, config.window()), config);
    }

    @Override
    public Instant roomAt(Instant now, BudgetConfig config) {
        return spend.roomAt(now, config);
    }

    @Override
    public @Nullable Instant roomAt(Instant now, BudgetConfig config, double cost) {
        return cost <= config.limit() ? spend.roomAt(now, config, cost) : null;
    }

    @Override
    public double limit(BudgetConfig config) {
        return config.limit();
    }

    @Override
    public boolean roomMayAppearEarly() {
        return false;
    }

    @Override
    public void limitChanged(BudgetConfig oldConfig, BudgetConfig newConfig) {}

    @Override
    public void close() {}

    @Override
    public void resetWindow() {
        spend.clear();
    }
}
