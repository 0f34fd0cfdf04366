package com.example.sumifixtures.clean;

import io.sumi.outbox.Outbox;
import io.sumi.outbox.OutboxMessage;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.kafka.core.KafkaTemplate;
import org.springframework.transaction.annotation.Transactional;

/** Business rows and the outbox row in one transaction; the Kafka send is elsewhere, outside any appending transaction. */
public class PlaceOrder {

    Outbox outbox;
    JdbcTemplate jdbc;
    KafkaTemplate<String, String> kafka;

    @Transactional
    public void placeOrder(String order) {
        jdbc.update("INSERT INTO orders (id) VALUES (?)", order);
        outbox.append(OutboxMessage.builder(order, "mail.send", "{}").build());
    }

    /** Not transactional and appends nothing: may talk to Kafka. */
    public void publishStatistics(String line) {
        kafka.send("stats", line);
    }
}
