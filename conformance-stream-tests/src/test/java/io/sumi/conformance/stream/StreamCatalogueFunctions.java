package io.sumi.conformance.stream;

import com.rabbitmq.client.Channel;
import io.sumi.conformance.Work;
import io.sumi.consumer.IdempotencyContext;
import io.sumi.consumer.IdempotencyMode;
import io.sumi.consumer.IdempotentHandler;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;
import org.springframework.amqp.support.AmqpHeaders;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.kafka.support.Acknowledgment;
import org.springframework.kafka.support.KafkaHeaders;
import org.springframework.messaging.Message;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * The catalogue's functional beans, one per role, bound by both Stream kinds (their bindings are in
 * {@code application-stream-kafka.properties} / {@code -rabbit}); the {@code plain*} ones without
 * Sumi. The ledger namespace of a Sumi function is its bean name. Every scenario's keys and payloads
 * are unique, so the two kinds' contexts can share the namespaces.
 */
@Configuration(proxyBeanMethods = false)
public class StreamCatalogueFunctions {

    /** The budget of {@code catalogueBudget}: named after its ledger consumer, the function. */
    static final String BUDGET = "catalogueBudget";

    /** The function (bean) of each role; its input binding is {@code <name>-in-0}. */
    static String function(io.sumi.conformance.Role role) {
        String[] words = role.name().toLowerCase(java.util.Locale.ROOT).split("_");
        StringBuilder name = new StringBuilder("catalogue");
        for (String word : words) {
            name.append(Character.toUpperCase(word.charAt(0))).append(word.substring(1));
        }
        return name.toString();
    }

    static String payload(Message<?> message) {
        Object payload = message.getPayload();
        return payload instanceof byte[] bytes ? new String(bytes, StandardCharsets.UTF_8) : String.valueOf(payload);
    }

    static @Nullable String keyHeader(Message<?> message) {
        Object key = message.getHeaders().get("idempotency-key");
        return key instanceof byte[] bytes
                ? new String(bytes, StandardCharsets.UTF_8)
                : key == null ? null : key.toString();
    }

    @Bean
    @IdempotentHandler(mode = IdempotencyMode.LEASE)
    Consumer<Message<String>> catalogueLease(Work work) {
        return message ->
                work.run(message.getPayload(), IdempotencyContext.current().key(), false);
    }

    @Bean
    Consumer<Message<String>> cataloguePlain(Work work) {
        return message -> work.run(message.getPayload(), keyHeader(message), false);
    }

    @Bean
    @IdempotentHandler(mode = IdempotencyMode.LEASE)
    Consumer<Message<String>> catalogueHeld(Work work) {
        return message ->
                work.run(message.getPayload(), IdempotencyContext.current().key(), false);
    }

    @Bean
    Consumer<Message<String>> cataloguePlainHeld(Work work) {
        return message -> work.run(message.getPayload(), keyHeader(message), false);
    }

    @Bean
    @IdempotentHandler(mode = IdempotencyMode.TRANSACTIONAL)
    Consumer<Message<String>> catalogueTx(Work work) {
        return message ->
                work.run(message.getPayload(), IdempotencyContext.current().key(), true);
    }

    /** The transactional function without Sumi: its own JDBC transaction, as @Transactional would give it. */
    @Bean
    Consumer<Message<String>> cataloguePlainTx(Work work, PlatformTransactionManager transactions) {
        TransactionTemplate transaction = new TransactionTemplate(transactions);
        return message ->
                transaction.executeWithoutResult(status -> work.run(message.getPayload(), keyHeader(message), true));
    }

    /**
     * How a MANUAL binding's function settles its message, by what the binder put in its headers:
     * the Kafka binder an {@link Acknowledgment}, the Rabbit binder the channel and delivery tag.
     */
    record Settlement(
            @Nullable Acknowledgment kafka, @Nullable Channel channel, long tag) {

        static Settlement of(Message<?> message) {
            Object tag = message.getHeaders().get(AmqpHeaders.DELIVERY_TAG);
            return new Settlement(
                    message.getHeaders().get(KafkaHeaders.ACKNOWLEDGMENT, Acknowledgment.class),
                    message.getHeaders().get(AmqpHeaders.CHANNEL, Channel.class),
                    tag instanceof Long value ? value : -1);
        }

        void ack() {
            settle(() -> kafka.acknowledge(), () -> channel.basicAck(tag, false));
        }

        void nack() {
            settle(() -> kafka.nack(Duration.ofMillis(100)), () -> channel.basicNack(tag, false, true));
        }

        void reject() {
            settle(
                    () -> {
                        throw new IllegalStateException("Kafka's Acknowledgment has no reject");
                    },
                    () -> channel.basicReject(tag, true));
        }

        private void settle(Runnable onKafka, IoAction onRabbit) {
            if (kafka != null) {
                onKafka.run();
            } else if (channel != null) {
                try {
                    onRabbit.run();
                } catch (IOException ex) {
                    throw new UncheckedIOException(ex);
                }
            } else {
                throw new IllegalStateException("a MANUAL binding's message without an acknowledgment header");
            }
        }
    }

    @FunctionalInterface
    interface IoAction {
        void run() throws IOException;
    }

    /** MANUAL acknowledgement: the function acks, nacks or rejects (with requeue) itself. */
    @Bean
    @IdempotentHandler(mode = IdempotencyMode.LEASE)
    Consumer<Message<String>> catalogueManual(Work work) {
        return message -> {
            String payload = message.getPayload();
            Settlement settlement = Settlement.of(message);
            if (work.nacks(payload)) {
                if (work.scriptOf(payload).rejects()) {
                    settlement.reject();
                } else {
                    settlement.nack();
                }
                return;
            }
            work.run(payload, IdempotencyContext.current().key(), false);
            settlement.ack();
        };
    }

    /** MANUAL acknowledgement, prefetch 2: the function may keep a delivery unacknowledged (Rabbit). */
    @Bean
    @IdempotentHandler(mode = IdempotencyMode.LEASE)
    Consumer<Message<String>> catalogueManualDefer(Work work) {
        return message -> {
            String payload = message.getPayload();
            Settlement settlement = Settlement.of(message);
            work.run(payload, IdempotencyContext.current().key(), false);
            if (work.scriptOf(payload).defers()) {
                // Acknowledged later (a batching application): Sumi must not settle it meanwhile.
                work.deferred(payload, () -> {
                    try {
                        settlement.ack();
                    } catch (RuntimeException ex) {
                        // The channel may be gone: nothing to settle then.
                    }
                });
                return;
            }
            settlement.ack();
        };
    }

    /** The ledger-down scenarios' function: a short lease, a binding they stop and start. */
    @Bean
    @IdempotentHandler(mode = IdempotencyMode.LEASE, lease = "3s")
    Consumer<Message<String>> catalogueLedgerDown(Work work) {
        return message ->
                work.run(message.getPayload(), IdempotencyContext.current().key(), false);
    }

    /** The stop/restart scenario's function: one consumer, a binding it stops and starts. */
    @Bean
    @IdempotentHandler(mode = IdempotencyMode.LEASE)
    Consumer<Message<String>> catalogueStop(Work work) {
        return message ->
                work.run(message.getPayload(), IdempotencyContext.current().key(), false);
    }

    /** Bound to the budget of its own name ({@link io.sumi.conformance.BudgetWindow}). */
    @Bean
    @IdempotentHandler(mode = IdempotencyMode.LEASE, budget = BUDGET)
    Consumer<Message<String>> catalogueBudget(Work work) {
        return message ->
                work.run(message.getPayload(), IdempotencyContext.current().key(), false);
    }

    /** Every catalogue binding's dead letters, read back into {@link Work} with the reason the binder gave. */
    @Bean
    Consumer<Message<byte[]>> catalogueDeadLetters(Work work) {
        return message -> {
            Object reason = message.getHeaders().get("x-exception-message");
            if (reason == null) {
                reason = message.getHeaders().get("x-first-death-reason");
            }
            work.deadLettered(
                    payload(message),
                    reason instanceof byte[] bytes
                            ? new String(bytes, StandardCharsets.UTF_8)
                            : String.valueOf(reason));
        };
    }
}
