package io.sumi.examples.mail.orders;

import java.util.List;
import java.util.Locale;
import java.util.Objects;

/**
 * An order as the shop places it.
 *
 * @param id the order id (also the outbox aggregate id, so the broker key, of its confirmation mail)
 * @param customerEmail where the confirmation mail goes
 * @param lines what was ordered, at least one line
 */
public record Order(String id, String customerEmail, List<Line> lines) {

    public Order {
        Objects.requireNonNull(id, "id");
        Objects.requireNonNull(customerEmail, "customerEmail");
        lines = List.copyOf(lines);
        if (lines.isEmpty()) {
            throw new IllegalArgumentException("An order needs at least one line");
        }
    }

    /**
     * One line of an order. The quantity is not checked here: the database refuses a quantity of
     * 0 or less ({@code order_lines_quantity_ck}).
     */
    public record Line(String sku, String name, int quantity, long unitPriceCents) {

        public long totalCents() {
            return quantity * unitPriceCents;
        }
    }

    public long totalCents() {
        return lines.stream().mapToLong(Line::totalCents).sum();
    }

    /** Cents as an amount, {@code 1234} as {@code 12.34}. */
    static String amount(long cents) {
        return String.format(Locale.ROOT, "%d.%02d", cents / 100, Math.abs(cents % 100));
    }
}
