package io.sumi.examples.mail;

import org.springframework.amqp.core.BindingBuilder;
import org.springframework.amqp.core.Declarables;
import org.springframework.amqp.core.DirectExchange;
import org.springframework.amqp.core.Queue;
import org.springframework.amqp.core.QueueBuilder;
import org.springframework.amqp.core.TopicExchange;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * The RabbitMQ side of the {@code rabbitmq} mode: the exchange the outbox publishes the topic to
 * (named like the topic, routing key = the order id), the queue bound to it with {@code #}, and its
 * dead-letter exchange and queue ({@code <topic>.dlx}, {@code <topic>.dlq}).
 */
@Configuration(proxyBeanMethods = false)
@ConditionalOnProperty(name = "mail-consumer.broker", havingValue = "rabbitmq")
public class RabbitMailTopology {

    @Bean
    Declarables mailTopology(@Value("${mail-consumer.topic:mail.send}") String topic) {
        TopicExchange exchange = new TopicExchange(topic);
        DirectExchange deadLetterExchange = new DirectExchange(topic + ".dlx");
        Queue queue = QueueBuilder.durable(topic)
                .deadLetterExchange(deadLetterExchange.getName())
                .deadLetterRoutingKey(topic)
                .build();
        Queue deadLetters = QueueBuilder.durable(topic + ".dlq").build();
        return new Declarables(
                exchange,
                deadLetterExchange,
                queue,
                deadLetters,
                BindingBuilder.bind(queue).to(exchange).with("#"),
                BindingBuilder.bind(deadLetters).to(deadLetterExchange).with(topic));
    }
}
