package io.sumi.consumer.messaging.internal;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.springframework.messaging.Message;
import org.springframework.messaging.support.MessageBuilder;

/**
 * Cuts the arguments of a batch listener method down to the messages that must run (the
 * executor's {@code BatchBody} gets their indexes: duplicates and messages already done are left
 * out). The binders of every listener type (Kafka, RabbitMQ, JMS) call their batch methods with
 * the same kinds of per-message arguments, so they share this.
 */
public final class BatchArguments {

    private BatchArguments() {}

    /**
     * The arguments with every per-message argument cut down to {@code indexes}: a {@link List} of
     * {@code size} elements (the messages, their payloads, a list of one header's values), and a
     * Spring {@link Message} whose payload is such a list, with each of its list-valued headers of
     * {@code size} cut the same way. Other arguments are kept as they are; a binder replaces its
     * own batch types (e.g. Kafka's {@code ConsumerRecords}) in the copy it gets back.
     *
     * @param size how many messages the batch has
     * @param indexes the positions (in the batch, ascending) of the messages to keep
     */
    public static Object[] filter(Object[] args, int size, List<Integer> indexes) {
        Object[] filtered = args.clone();
        for (int a = 0; a < args.length; a++) {
            Object arg = args[a];
            if (arg instanceof List<?> list && list.size() == size) {
                filtered[a] = pick(list, indexes);
            } else if (arg instanceof Message<?> message
                    && message.getPayload() instanceof List<?> payload
                    && payload.size() == size) {
                Map<String, Object> headers = new LinkedHashMap<>();
                message.getHeaders()
                        .forEach((name, value) -> headers.put(
                                name,
                                value instanceof List<?> values && values.size() == size
                                        ? pick(values, indexes)
                                        : value));
                filtered[a] = MessageBuilder.withPayload(pick(payload, indexes))
                        .copyHeaders(headers)
                        .build();
            }
        }
        return filtered;
    }

    /** The elements of {@code list} at {@code indexes}, in that order. */
    public static <T> List<T> pick(List<T> list, List<Integer> indexes) {
        List<T> picked = new ArrayList<>(indexes.size());
        for (int index : indexes) {
            picked.add(list.get(index));
        }
        return picked;
    }
}
