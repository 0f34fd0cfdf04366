package io.sumi.autoconfigure;

import java.nio.charset.StandardCharsets;
import org.apache.kafka.common.errors.SerializationException;
import org.apache.kafka.common.serialization.Deserializer;

/**
 * A value deserializer that cannot read a value starting with {@code poison}: behind Spring Kafka's
 * {@code ErrorHandlingDeserializer} such a record reaches the container as a poison pill, which it
 * hands to the error handler without ever calling the listener. Public: Kafka instantiates it by
 * name.
 */
public class PoisonPillDeserializer implements Deserializer<String> {

    @Override
    public String deserialize(String topic, byte[] data) {
        String value = new String(data, StandardCharsets.UTF_8);
        if (value.startsWith("poison")) {
            throw new SerializationException("unreadable value: " + value);
        }
        return value;
    }
}
