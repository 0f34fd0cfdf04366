package io.sumi.budget;

import java.util.Optional;
import org.jspecify.annotations.Nullable;

/** The permit current on each thread (see {@link BudgetPermit#current()}). */
final class CurrentPermit {

    private static final ThreadLocal<@Nullable BudgetPermit> CURRENT = new ThreadLocal<>();

    private CurrentPermit() {}

    static BudgetPermit.Scope open(BudgetPermit permit) {
        BudgetPermit previous = CURRENT.get();
        CURRENT.set(permit);
        return () -> {
            if (previous == null) {
                CURRENT.remove();
            } else {
                CURRENT.set(previous);
            }
        };
    }

    static Optional<BudgetPermit> find() {
        return Optional.ofNullable(CURRENT.get());
    }
}
