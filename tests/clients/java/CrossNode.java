import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.Delivery;
import com.rabbitmq.client.GetResponse;
import com.rabbitmq.client.ShutdownSignalException;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * A Leveret cluster used as Java applications use RabbitMQ, through the RabbitMQ Java client:
 * a queue on node A, a publisher on B, a consumer on C. Prints a line per check that held and
 * exits with status 1 at the first that did not.
 */
public final class CrossNode {
    private static final int MESSAGES = 100;
    private static final long WAIT_SECONDS = 10;

    public static void main(String[] args) throws Exception {
        try (Connection a = open(args[0], "java-a");
                Connection b = open(args[1], "java-b");
                Connection c = open(args[2], "java-c")) {
            String queue = "java-orders";
            String dead = "java-orders-dead";
            Channel onC = c.createChannel();
            onC.queueDelete(dead);
            onC.queueDeclare(dead, true, false, false, null);
            Channel onA = a.createChannel();
            onA.queueDelete(queue);
            Map<String, Object> deadLettering =
                    Map.of("x-dead-letter-exchange", "", "x-dead-letter-routing-key", dead);
            onA.queueDeclare(queue, true, false, false, deadLettering);
            waitForQueue(b, queue);
            waitForQueue(c, queue);
            waitForQueue(b, dead);

            publishThroughB(b, queue);
            consumeThroughC(c, queue);
            deadLetteredCountIsALong(b, dead);
            requestAndReplyAcrossNodes(a, b, c);
            exclusiveQueueStaysWithItsConnection(b, c);
            limitsAndReturnsAcrossNodes(a, b);
            consumerHearsOfADeleteOnAnotherNode(b, c, queue);
        }
    }

    private static void publishThroughB(Connection b, String queue) throws Exception {
        Channel channel = b.createChannel();
        channel.confirmSelect();
        for (int i = 0; i < MESSAGES; i++) {
            Map<String, Object> headers = Map.of("seq", (long) i, "small", i, "kind", "order");
            AMQP.BasicProperties properties =
                    new AMQP.BasicProperties.Builder().deliveryMode(2).headers(headers).build();
            channel.basicPublish("", queue, true, properties, body("order-" + i));
        }
        channel.waitForConfirmsOrDie(WAIT_SECONDS * 1000);
        check(true, MESSAGES + " persistent messages published through B and confirmed");
    }

    private static void consumeThroughC(Connection c, String queue) throws Exception {
        Channel channel = c.createChannel();
        channel.basicQos(10);
        BlockingQueue<Delivery> deliveries = new LinkedBlockingQueue<>();
        String tag = channel.basicConsume(queue, false, (t, d) -> deliveries.add(d), t -> {});
        List<String> bodies = new ArrayList<>();
        boolean typesKept = true;
        for (int i = 0; i < MESSAGES; i++) {
            Delivery delivery = deliveries.poll(WAIT_SECONDS, TimeUnit.SECONDS);
            if (delivery == null) {
                check(false, "delivery " + i + " arrives through C");
            }
            Map<String, Object> headers = delivery.getProperties().getHeaders();
            typesKept &= headers.get("seq") instanceof Long && headers.get("small") instanceof Integer;
            String text = new String(delivery.getBody(), StandardCharsets.UTF_8);
            bodies.add(text);
            long deliveryTag = delivery.getEnvelope().getDeliveryTag();
            if (text.equals("order-7")) {
                channel.basicReject(deliveryTag, false);
            } else {
                channel.basicAck(deliveryTag, false);
            }
        }
        List<String> expected = new ArrayList<>();
        for (int i = 0; i < MESSAGES; i++) {
            expected.add("order-" + i);
        }
        check(bodies.equals(expected), "consumed through C in publishing order, prefetch 10");
        check(typesKept, "headers keep their types (a Long stays a Long, an Integer an Integer)");
        channel.basicCancel(tag);
    }

    @SuppressWarnings("unchecked")
    private static void deadLetteredCountIsALong(Connection b, String dead) throws Exception {
        Channel channel = b.createChannel();
        GetResponse response = null;
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(WAIT_SECONDS);
        while (response == null && System.nanoTime() < deadline) {
            response = channel.basicGet(dead, true);
            if (response == null) {
                Thread.sleep(20);
            }
        }
        check(response != null, "the rejected message reaches the dead-letter queue on C");
        List<Map<String, Object>> deaths =
                (List<Map<String, Object>>) response.getProps().getHeaders().get("x-death");
        long count = (Long) deaths.get(0).get("count"); // the cast Spring AMQP's users make
        check(count == 1 && deaths.get(0).get("reason").toString().equals("rejected"),
                "x-death says rejected once, its count a Long");
    }

    private static void requestAndReplyAcrossNodes(Connection a, Connection b, Connection c)
            throws Exception {
        String requests = "java-requests";
        Channel setup = a.createChannel();
        setup.queueDelete(requests);
        setup.queueDeclare(requests, false, false, false, null);
        waitForQueue(c, requests);
        Channel server = c.createChannel();
        server.basicConsume(requests, true, (t, d) -> {
            AMQP.BasicProperties reply = new AMQP.BasicProperties.Builder()
                    .correlationId(d.getProperties().getCorrelationId()).build();
            String answer = new String(d.getBody(), StandardCharsets.UTF_8).toUpperCase();
            server.basicPublish("", d.getProperties().getReplyTo(), reply, body(answer));
        }, t -> {});
        Channel client = b.createChannel();
        BlockingQueue<Delivery> replies = new LinkedBlockingQueue<>();
        client.basicConsume("amq.rabbitmq.reply-to", true, (t, d) -> replies.add(d), t -> {});
        AMQP.BasicProperties request = new AMQP.BasicProperties.Builder()
                .correlationId("42").replyTo("amq.rabbitmq.reply-to").build();
        client.basicPublish("", requests, request, body("ping"));
        Delivery reply = replies.poll(WAIT_SECONDS, TimeUnit.SECONDS);
        check(reply != null && new String(reply.getBody(), StandardCharsets.UTF_8).equals("PING")
                && "42".equals(reply.getProperties().getCorrelationId()),
                "a request through B, served through C, answered by direct reply-to");
    }

    private static void exclusiveQueueStaysWithItsConnection(Connection b, Connection c)
            throws Exception {
        String exclusive = b.createChannel().queueDeclare().getQueue();
        try {
            c.createChannel().queueDeclarePassive(exclusive);
            check(false, "another connection is refused the exclusive queue");
        } catch (IOException error) {
            ShutdownSignalException closed = (ShutdownSignalException) error.getCause();
            int code = ((AMQP.Channel.Close) closed.getReason()).getReplyCode();
            check(code == 405, "another connection is refused the exclusive queue: 405");
        }
    }

    private static void limitsAndReturnsAcrossNodes(Connection a, Connection b) throws Exception {
        String limited = "java-limited";
        Channel onA = a.createChannel();
        onA.queueDelete(limited);
        Map<String, Object> limit = Map.of("x-max-length", 1L, "x-overflow", "reject-publish");
        onA.queueDeclare(limited, false, false, false, limit);
        waitForQueue(b, limited);
        Channel channel = b.createChannel();
        channel.confirmSelect();
        List<Integer> returned = new ArrayList<>();
        channel.addReturnListener(r -> returned.add(r.getReplyCode()));
        channel.basicPublish("", limited, true, null, body("first"));
        check(channel.waitForConfirms(WAIT_SECONDS * 1000),
                "a publish through B to a queue on A with room is acked");
        channel.basicPublish("", limited, true, null, body("second"));
        check(!channel.waitForConfirms(WAIT_SECONDS * 1000),
                "one to the full queue (reject-publish) is nacked");
        channel.basicPublish("", "java-nowhere", true, null, body("lost"));
        check(channel.waitForConfirms(WAIT_SECONDS * 1000) && returned.equals(List.of(312)),
                "an unroutable mandatory publish is returned (312), then acked");
        onA.queueDelete(limited);
    }

    private static void consumerHearsOfADeleteOnAnotherNode(Connection b, Connection c,
            String queue) throws Exception {
        CountDownLatch cancelled = new CountDownLatch(1);
        b.createChannel().basicConsume(queue, true, (t, d) -> {}, t -> cancelled.countDown());
        c.createChannel().queueDelete(queue);
        check(cancelled.await(WAIT_SECONDS, TimeUnit.SECONDS),
                "a consumer through B hears basic.cancel when its queue is deleted through C");
    }

    private static Connection open(String uri, String name) throws Exception {
        ConnectionFactory factory = new ConnectionFactory();
        factory.setUri(uri);
        factory.setAutomaticRecoveryEnabled(false);
        return factory.newConnection(name);
    }

    /** Declarations reach the other nodes a moment after the declaring node answers. */
    private static void waitForQueue(Connection connection, String queue) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(WAIT_SECONDS);
        while (true) {
            try (Channel channel = connection.createChannel()) {
                channel.queueDeclarePassive(queue);
                return;
            } catch (IOException notYet) {
                if (System.nanoTime() > deadline) {
                    throw notYet;
                }
                Thread.sleep(20);
            }
        }
    }

    private static byte[] body(String text) {
        return text.getBytes(StandardCharsets.UTF_8);
    }

    private static void check(boolean held, String what) {
        if (!held) {
            System.out.println("FAILED " + what);
            System.exit(1);
        }
        System.out.println("ok " + what);
    }
}
