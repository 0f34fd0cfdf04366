package com.example.sumifixtures.violating;

import io.sumi.outbox.Outbox;
import io.sumi.outbox.OutboxMessage;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import org.springframework.kafka.core.KafkaTemplate;
import org.springframework.transaction.annotation.Transactional;

/** Violates the outbox rule twice: an HTTP call beside the append, and a Kafka send through a helper in the same transaction. */
public class PlaceOrderAndCallPartner {

    Outbox outbox;
    HttpClient http;
    KafkaTemplate<String, String> kafka;

    public void placeOrder(String order) throws Exception {
        outbox.append(OutboxMessage.builder(order, "mail.send", "{}").build());
        http.send(
                HttpRequest.newBuilder(URI.create("http://partner/orders")).build(),
                HttpResponse.BodyHandlers.discarding());
    }

    @Transactional
    public void placeOrderAndNotify(String order) {
        append(order);
        notifyWarehouse(order);
    }

    private void append(String order) {
        outbox.append(OutboxMessage.builder(order, "mail.send", "{}").build());
    }

    private void notifyWarehouse(String order) {
        kafka.send("warehouse", order);
    }
}
