package io.sumi.examples.mail.demo;

import com.icegreen.greenmail.util.GreenMail;
import com.icegreen.greenmail.util.ServerSetup;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The mail demo's mode: in-process Kafka and PostgreSQL (see
 * {@link io.sumi.examples.support.DemoModeInitializer}, which also states where the demo's defaults
 * stand among the property sources) and an in-process SMTP server (GreenMail) that
 * {@code spring.mail.*} points at.
 *
 * <p>Registered in {@code META-INF/spring.factories}, so it runs for {@code SpringApplication} and
 * for {@code @SpringBootTest} alike.
 */
public class DemoModeInitializer extends io.sumi.examples.support.DemoModeInitializer<GreenMail> {

    /**
     * The demo's settings: quick retries, so that its dozens of retried messages do not take
     * minutes; a short fetch wait, so that a consumer that seeks back for a retry gets its records
     * at once; and HELO instead of EHLO towards the in-process SMTP server: a connection with EHLO
     * took ~45 ms here (its multi-line answer meets Nagle's algorithm and delayed ACKs), with HELO
     * ~1.5 ms.
     */
    private static final Map<String, Object> DEMO_DEFAULTS = Map.of(
            "mail-consumer.retry.interval", "100ms",
            "sumi.kafka.busy-retry-interval", "50ms",
            "sumi.consumer.lease", "60s",
            "spring.kafka.consumer.fetch-max-wait", "50ms",
            "spring.mail.properties.mail.smtp.ehlo", "false");

    @Override
    protected GreenMail startService() {
        GreenMail server = new GreenMail(new ServerSetup(0, "127.0.0.1", ServerSetup.PROTOCOL_SMTP));
        server.start();
        return server;
    }

    @Override
    protected void stopService(GreenMail server) {
        server.stop();
    }

    @Override
    protected Map<String, Object> serviceProperties(GreenMail server) {
        Map<String, Object> properties = new LinkedHashMap<>();
        properties.put("spring.mail.host", "127.0.0.1");
        properties.put("spring.mail.port", server.getSmtp().getPort());
        return properties;
    }

    @Override
    protected Map<String, Object> demoDefaults() {
        return DEMO_DEFAULTS;
    }
}
