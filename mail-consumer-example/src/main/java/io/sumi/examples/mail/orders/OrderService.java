package io.sumi.examples.mail.orders;

import io.sumi.examples.mail.MailConsumerProperties;
import io.sumi.examples.mail.MailRequest;
import io.sumi.outbox.Outbox;
import io.sumi.outbox.OutboxMessage;
import java.util.Locale;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Service;
import org.springframework.transaction.annotation.Transactional;

/**
 * Places orders, and with each one its confirmation mail: the order rows and the outbox row of the
 * mail request are written in <b>one</b> transaction, so they commit together or not at all. No
 * mail is sent here and nothing talks to Kafka: after the commit, Sumi's outbox dispatcher (run by
 * the starter) publishes the row to {@code mail.send}, with the row id as the {@code outbox-id}
 * header, which {@link io.sumi.examples.mail.MailListener} takes as its idempotency key.
 */
@Service
public class OrderService {

    /** The schema version of the mail request payload, sent as the {@code schema-version} header. */
    public static final String MAIL_SCHEMA_VERSION = "1";

    private final JdbcTemplate jdbc;
    private final Outbox outbox;
    private final String mailTopic;

    public OrderService(JdbcTemplate jdbc, Outbox outbox, MailConsumerProperties properties) {
        this.jdbc = jdbc;
        this.outbox = outbox;
        this.mailTopic = properties.topic();
    }

    /**
     * Writes the order and appends its confirmation mail to the outbox, in one transaction.
     *
     * <p>If a write fails after the append (here: a line the database refuses), the exception
     * rolls the whole transaction back: no order, no outbox row, so no mail.
     *
     * @return the outbox row id of the confirmation mail (its {@code outbox-id})
     * @throws org.springframework.dao.DataAccessException if a write fails; nothing was written
     */
    @Transactional
    public long placeOrder(Order order) {
        jdbc.update(
                "INSERT INTO orders (id, customer_email, total_cents) VALUES (?, ?, ?)",
                order.id(),
                order.customerEmail(),
                order.totalCents());
        // The aggregate id is the order: the broker key of the mail request.
        long mailId = outbox.append(OutboxMessage.builder(
                        order.id(), mailTopic, confirmationMail(order).toJson())
                .schemaVersion(MAIL_SCHEMA_VERSION)
                .build());
        int lineNo = 0;
        for (Order.Line line : order.lines()) {
            jdbc.update(
                    "INSERT INTO order_lines (order_id, line_no, sku, quantity, unit_price_cents) VALUES (?, ?, ?, ?, ?)",
                    order.id(),
                    ++lineNo,
                    line.sku(),
                    line.quantity(),
                    line.unitPriceCents());
        }
        return mailId;
    }

    /** The confirmation mail of an order. */
    public static MailRequest confirmationMail(Order order) {
        StringBuilder body = new StringBuilder("Hello,\n\nthank you for your order ")
                .append(order.id())
                .append(":\n\n");
        for (Order.Line line : order.lines()) {
            body.append(String.format(
                    Locale.ROOT,
                    "  %3d x %-24s %10s\n",
                    line.quantity(),
                    line.name(),
                    Order.amount(line.totalCents())));
        }
        body.append(
                String.format(Locale.ROOT, "  %-30s %10s\n\n-- The shop\n", "Total", Order.amount(order.totalCents())));
        return new MailRequest(order.customerEmail(), subject(order.id()), body.toString());
    }

    /** The subject of an order's confirmation mail; it names the order. */
    public static String subject(String orderId) {
        return "Your order " + orderId + " is confirmed";
    }
}
