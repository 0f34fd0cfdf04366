package io.sumi.faults.app;

import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;

/**
 * The instance's part in a fault run ({@code fault.*}).
 *
 * @param slot this instance's number; its orders are {@code o-<slot>-<seq>}
 * @param instance a name for this incarnation, written on the shipments it makes
 * @param orders how many orders this slot creates over the whole run (a restarted instance resumes)
 * @param rate orders per second this instance creates
 * @param goFile the generator starts once this file exists (the driver creates it when every
 *     instance is up)
 * @param providerUrl the payment provider's base URL
 * @param topic the topic orders are published to
 * @param broker {@code kafka} (the listeners are {@code @KafkaListener}s on {@code topic}) or
 *     {@code rabbit} ({@code @RabbitListener}s on the quorum queues {@code shipments} and
 *     {@code charges}, which the driver declares)
 * @param guard whether the listeners are Sumi's idempotent handlers (false: the negative control)
 */
@ConfigurationProperties("fault")
public record FaultAppProperties(
        @DefaultValue("1") int slot,
        @DefaultValue("app") String instance,
        @DefaultValue("100") int orders,
        @DefaultValue("20") int rate,
        String goFile,
        String providerUrl,
        @DefaultValue("orders") String topic,
        @DefaultValue("kafka") String broker,
        @DefaultValue("true") boolean guard) {}
