package io.sumi.conformance.stream;

import io.sumi.conformance.Work;
import io.sumi.consumer.IdempotencyContext;
import io.sumi.consumer.IdempotencyMode;
import io.sumi.consumer.IdempotentHandler;
import java.nio.charset.StandardCharsets;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
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
