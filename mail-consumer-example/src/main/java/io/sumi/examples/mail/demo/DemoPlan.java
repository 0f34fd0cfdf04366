package io.sumi.examples.mail.demo;

import io.sumi.examples.mail.MailRequest;
import io.sumi.examples.mail.orders.Order;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import org.jspecify.annotations.Nullable;

/**
 * What the demo does, decided up front from a seed:
 * <ul>
 *   <li>the orders it places through the order service, in order; a few of them have a line the
 *   database refuses, so their transaction rolls back after the outbox append;</li>
 *   <li>the orders whose confirmation mail goes to a greylisting mail server (its first attempt
 *   fails);</li>
 *   <li>the orders whose mail request the demo publishes to the broker once more after the
 *   dispatcher's send was acknowledged, with the same {@code outbox-id}: half at once to the next
 *   partition (two consumer threads race on the key), the rest later to a random partition;</li>
 *   <li>messages without a key, published past the outbox at even intervals.</li>
 * </ul>
 *
 * @param steps what to do, in order
 * @param orders every order placed, in order
 * @param rolledBack the ids of the orders whose transaction rolls back
 * @param greylisted the ids of the orders whose mail fails on its first attempt
 * @param copies the copies to publish, by order id
 * @param poisonMessages how many messages without a key are published
 */
public record DemoPlan(
        List<Step> steps,
        List<Order> orders,
        Set<String> rolledBack,
        Set<String> greylisted,
        Map<String, Copy> copies,
        int poisonMessages) {

    /** The mail domain of the greylisted customers: see {@link FlakyMailGateway}. */
    public static final String GREYLISTED_DOMAIN = FlakyMailGateway.GREYLISTING_DOMAIN;

    private static final List<Order.Line> CATALOG = List.of(
            new Order.Line("ink-01", "Sumi ink stick, pine soot", 1, 1890),
            new Order.Line("ink-02", "Liquid sumi ink, 180 ml", 1, 1250),
            new Order.Line("stone-01", "Suzuri ink stone", 1, 4200),
            new Order.Line("brush-01", "Fude brush, goat hair", 1, 2350),
            new Order.Line("paper-01", "Hanshi paper, 100 sheets", 1, 990),
            new Order.Line("felt-01", "Shitajiki felt mat", 1, 1400),
            new Order.Line("weight-01", "Bunchin paperweights", 1, 2800));

    /**
     * One step: place an order, or publish a message without a key.
     *
     * @param order the order to place, or {@code null} for a keyless message
     * @param poison the keyless message's payload, or {@code null}
     * @param partition the keyless message's partition
     */
    public record Step(@Nullable Order order, @Nullable String poison, int partition) {

        public boolean isOrder() {
            return order != null;
        }
    }

    /**
     * A copy of a dispatched mail request, published once more with the same {@code outbox-id}.
     *
     * @param concurrent sent at once to the partition after the original's; else sent later
     * @param partition the partition of a later copy (any, possibly the original's)
     * @param delayMillis how long after the original's acknowledgement a later copy is sent
     */
    public record Copy(boolean concurrent, int partition, long delayMillis) {}

    /** Orders that commit. */
    public int committedOrders() {
        return orders.size() - rolledBack.size();
    }

    public int concurrentCopies() {
        return (int) copies.values().stream().filter(Copy::concurrent).count();
    }

    public int lateCopies() {
        return copies.size() - concurrentCopies();
    }

    /** The ids of the orders that commit, in order. */
    public List<String> committedOrderIds() {
        return orders.stream()
                .map(Order::id)
                .filter(id -> !rolledBack.contains(id))
                .toList();
    }

    public static DemoPlan generate(
            int orderCount,
            int rolledBackCount,
            int failing,
            double duplicateRatio,
            double concurrentShare,
            int poison,
            int partitions,
            long seed) {
        if (orderCount < 1 || rolledBackCount < 0 || rolledBackCount >= orderCount) {
            throw new IllegalArgumentException("sumi.demo.orders (" + orderCount + ") must be positive and exceed"
                    + " sumi.demo.rolled-back-orders (" + rolledBackCount + ")");
        }
        Random random = new Random(seed);
        List<Integer> indexes = new ArrayList<>();
        for (int i = 0; i < orderCount; i++) {
            indexes.add(i);
        }
        Collections.shuffle(indexes, random);
        Set<Integer> rollingBack = new LinkedHashSet<>(indexes.subList(0, rolledBackCount));
        List<Integer> committing = indexes.subList(rolledBackCount, orderCount);
        int greylistedCount = Math.min(failing, committing.size());
        Set<Integer> greylisting = new LinkedHashSet<>(committing.subList(0, greylistedCount));

        List<Order> orders = new ArrayList<>(orderCount);
        Set<String> rolledBack = new LinkedHashSet<>();
        Set<String> greylisted = new LinkedHashSet<>();
        int newCustomers = 0;
        for (int i = 0; i < orderCount; i++) {
            String id = String.format(Locale.ROOT, "ord-%06d", 10_001 + i);
            String email;
            if (greylisting.contains(i)) {
                newCustomers++;
                email = "new-customer-" + newCustomers + "@" + GREYLISTED_DOMAIN;
            } else {
                email = "customer" + (i % 500) + "@example.com";
            }
            List<Order.Line> lines = new ArrayList<>();
            int lineCount = 1 + random.nextInt(3);
            List<Order.Line> catalog = new ArrayList<>(CATALOG);
            Collections.shuffle(catalog, random);
            for (int n = 0; n < lineCount; n++) {
                Order.Line item = catalog.get(n);
                lines.add(new Order.Line(item.sku(), item.name(), 1 + random.nextInt(3), item.unitPriceCents()));
            }
            if (rollingBack.contains(i)) {
                // The cart sent a line with quantity 0: the database's CHECK refuses it, after the outbox append.
                Order.Line item = catalog.get(lineCount);
                lines.add(new Order.Line(item.sku(), item.name(), 0, item.unitPriceCents()));
                rolledBack.add(id);
            }
            if (greylisting.contains(i)) {
                greylisted.add(id);
            }
            orders.add(new Order(id, email, lines));
        }

        // Copies of dispatched mail requests (rolled-back orders have none to copy).
        List<Integer> copyIndexes = new ArrayList<>(committing);
        Collections.shuffle(copyIndexes, random);
        int copyCount = (int) Math.round(committing.size() * Math.max(0, Math.min(1, duplicateRatio)));
        int concurrentCount = (int) Math.round(copyCount * Math.max(0, Math.min(1, concurrentShare)));
        Map<String, Copy> copies = new LinkedHashMap<>();
        for (int n = 0; n < copyCount; n++) {
            String id = orders.get(copyIndexes.get(n)).id();
            copies.put(
                    id,
                    n < concurrentCount
                            ? new Copy(true, -1, 0)
                            : new Copy(false, random.nextInt(partitions), 200 + random.nextInt(2800)));
        }

        // The steps: the orders in order, with the keyless messages spread over the run.
        List<Step> steps = new ArrayList<>(orderCount + poison);
        int nextPoison = 0;
        for (int i = 0; i < orderCount; i++) {
            while (nextPoison < poison && i >= (long) orderCount * (nextPoison + 1) / (poison + 1)) {
                steps.add(poisonStep(nextPoison++, partitions));
            }
            steps.add(new Step(orders.get(i), null, -1));
        }
        while (nextPoison < poison) {
            steps.add(poisonStep(nextPoison++, partitions));
        }
        return new DemoPlan(
                List.copyOf(steps),
                List.copyOf(orders),
                Collections.unmodifiableSet(rolledBack),
                Collections.unmodifiableSet(greylisted),
                Collections.unmodifiableMap(copies),
                poison);
    }

    private static Step poisonStep(int n, int partitions) {
        MailRequest mail = new MailRequest(
                "ops@example.com",
                "Poison message " + (n + 1) + " (no idempotency key)",
                "This message was published past the outbox, without a key; it must reach the dead-letter topic, never a mailbox.");
        return new Step(null, mail.toJson(), n % partitions);
    }
}
