package io.sumi.faults.app;

import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.stereotype.Component;

/** Writes the local effect of an order: one shipments row (no unique constraint, so doubles show). */
@Component
public class Shipments {

    private final JdbcClient jdbc;
    private final FaultAppProperties properties;

    Shipments(JdbcClient jdbc, FaultAppProperties properties) {
        this.jdbc = jdbc;
        this.properties = properties;
    }

    public void ship(String orderId) {
        jdbc.sql("INSERT INTO shipments (order_id, instance) VALUES (?, ?)")
                .params(orderId, properties.instance())
                .update();
    }
}
