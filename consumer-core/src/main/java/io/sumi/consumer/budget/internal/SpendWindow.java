package io.sumi.consumer.budget.internal;

import io.sumi.consumer.budget.BudgetConfig;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayDeque;
import java.util.Iterator;

/**
 * The costs of the calls permitted within the last window, oldest first. A cost counts from the
 * instant its call was permitted until {@code window} later (exclusive). Not thread-safe: the
 * owning budget guards it.
 */
final class SpendWindow {

    /** One permitted call; its cost can change until the call leaves the window. */
    static final class Entry implements SpendAccount.Reservation {
        final Instant at;
        double cost;

        Entry(Instant at, double cost) {
            this.at = at;
            this.cost = cost;
        }

        @Override
        public double cost() {
            return cost;
        }
    }

    private final ArrayDeque<Entry> entries = new ArrayDeque<>();

    Entry reserve(Instant now, double cost) {
        Entry entry = new Entry(now, cost);
        entries.addLast(entry);
        return entry;
    }

    void remove(Entry entry) {
        entries.remove(entry);
    }

    /** Forgets every cost (an operator's reset). */
    void clear() {
        entries.clear();
    }

    /** The spend of the window ending at {@code now}, after forgetting what has left it. */
    double total(Instant now, Duration window) {
        evict(now, window);
        double total = 0;
        for (Entry entry : entries) {
            total += entry.cost;
        }
        return total;
    }

    private void evict(Instant now, Duration window) {
        while (!entries.isEmpty() && !entries.peekFirst().at.plus(window).isAfter(now)) {
            entries.removeFirst();
        }
    }

    /**
     * The earliest instant at which one more call fits into the budget if no other call is made
     * meanwhile: when enough of the oldest costs have left the window.
     */
    Instant roomAt(Instant now, BudgetConfig config) {
        double remaining = total(now, config.window());
        Instant at = now;
        Iterator<Entry> oldestFirst = entries.iterator();
        while (exceeds(remaining, config) && oldestFirst.hasNext()) {
            Entry entry = oldestFirst.next();
            remaining -= entry.cost;
            at = entry.at.plus(config.window());
        }
        return at;
    }

    /**
     * The earliest instant at which calls costing {@code cost} together fit (a batch), if no other
     * call is made meanwhile; {@code cost} must not exceed the limit.
     */
    Instant roomAt(Instant now, BudgetConfig config, double cost) {
        double remaining = total(now, config.window());
        Instant at = now;
        Iterator<Entry> oldestFirst = entries.iterator();
        while (remaining + cost > config.limit() && oldestFirst.hasNext()) {
            Entry entry = oldestFirst.next();
            remaining -= entry.cost;
            at = entry.at.plus(config.window());
        }
        return at;
    }

    /** Whether one more call at {@code cost-per-call} would exceed the limit (or the limit is spent). */
    static boolean exceeds(double spent, BudgetConfig config) {
        return spent >= config.limit() || spent + config.costPerCall() > config.limit();
    }
}
