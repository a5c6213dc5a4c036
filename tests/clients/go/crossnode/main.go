// A Leveret cluster used as Go services use RabbitMQ, through the RabbitMQ Go client
// (amqp091-go): a queue on node A, a publisher on B, a consumer on C. Prints a line per check
// that held and exits with status 1 at the first that did not.
package main

import (
	"fmt"
	"os"
	"reflect"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

const (
	messages = 100
	wait     = 10 * time.Second
)

func check(held bool, what string) {
	if !held {
		fmt.Println("FAILED", what)
		os.Exit(1)
	}
	fmt.Println("ok", what)
}

func must(err error, what string) {
	if err != nil {
		fmt.Println("FAILED", what+":", err)
		os.Exit(1)
	}
}

func open(url string) *amqp.Connection {
	conn, err := amqp.Dial(url)
	must(err, "connect to "+url)
	return conn
}

func channel(conn *amqp.Connection) *amqp.Channel {
	ch, err := conn.Channel()
	must(err, "open a channel")
	return ch
}

// Declarations reach the other nodes a moment after the declaring node answers.
func waitForQueue(conn *amqp.Connection, queue string) {
	deadline := time.Now().Add(wait)
	for {
		ch := channel(conn)
		_, err := ch.QueueDeclarePassive(queue, true, false, false, false, nil)
		if err == nil {
			ch.Close()
			return
		}
		if time.Now().After(deadline) {
			must(err, "queue "+queue+" becomes known")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func main() {
	a, b, c := open(os.Args[1]), open(os.Args[2]), open(os.Args[3])
	defer a.Close()
	defer b.Close()
	defer c.Close()
	queue, dead := "go-jobs", "go-jobs-dead"

	onC := channel(c)
	_, err := onC.QueueDelete(dead, false, false, false)
	must(err, "delete the dead-letter queue")
	_, err = onC.QueueDeclare(dead, true, false, false, false, nil)
	must(err, "declare the dead-letter queue through C")
	onA := channel(a)
	_, err = onA.QueueDelete(queue, false, false, false)
	must(err, "delete the queue")
	args := amqp.Table{"x-dead-letter-exchange": "", "x-dead-letter-routing-key": dead}
	_, err = onA.QueueDeclare(queue, true, false, false, false, args)
	must(err, "declare the queue through A")
	waitForQueue(b, queue)
	waitForQueue(c, queue)
	waitForQueue(b, dead)

	// Publish through B, with confirms.
	pub := channel(b)
	must(pub.Confirm(false), "confirm mode")
	confirms := pub.NotifyPublish(make(chan amqp.Confirmation, messages))
	for i := 0; i < messages; i++ {
		msg := amqp.Publishing{
			DeliveryMode: amqp.Persistent,
			Headers:      amqp.Table{"seq": int64(i), "small": int32(i)},
			Body:         []byte(fmt.Sprintf("job-%d", i)),
		}
		must(pub.Publish("", queue, true, false, msg), "publish")
	}
	acked := 0
	timeout := time.After(wait)
	for acked < messages {
		select {
		case confirm := <-confirms:
			if !confirm.Ack {
				check(false, fmt.Sprintf("publish %d acked", confirm.DeliveryTag))
			}
			acked++
		case <-timeout:
			check(false, "every publish through B confirmed")
		}
	}
	check(true, fmt.Sprintf("%d persistent messages published through B and confirmed", messages))

	// Consume through C, prefetch 10, manual acks; reject one to the dead-letter queue.
	sub := channel(c)
	must(sub.Qos(10, 0, false), "qos")
	deliveries, err := sub.Consume(queue, "go-consumer", false, false, false, false, nil)
	must(err, "consume through C")
	inOrder, typesKept := true, true
	for i := 0; i < messages; i++ {
		select {
		case d := <-deliveries:
			inOrder = inOrder && string(d.Body) == fmt.Sprintf("job-%d", i)
			typesKept = typesKept && reflect.TypeOf(d.Headers["seq"]) == reflect.TypeOf(int64(0)) &&
				reflect.TypeOf(d.Headers["small"]) == reflect.TypeOf(int32(0))
			if string(d.Body) == "job-7" {
				must(d.Reject(false), "reject")
			} else {
				must(d.Ack(false), "ack")
			}
		case <-time.After(wait):
			check(false, fmt.Sprintf("delivery %d arrives through C", i))
		}
	}
	check(inOrder, "consumed through C in publishing order, prefetch 10")
	check(typesKept, "headers keep their types (int64 stays int64, int32 stays int32)")
	must(sub.Cancel("go-consumer", false), "cancel")

	// The rejected job, dead-lettered to C, read through B.
	get := channel(b)
	deadline := time.Now().Add(wait)
	var msg amqp.Delivery
	ok := false
	for !ok && time.Now().Before(deadline) {
		msg, ok, err = get.Get(dead, true)
		must(err, "get from the dead-letter queue")
		if !ok {
			time.Sleep(20 * time.Millisecond)
		}
	}
	check(ok && string(msg.Body) == "job-7", "the rejected job reaches the dead-letter queue on C")
	deaths, _ := msg.Headers["x-death"].([]interface{})
	first, _ := deaths[0].(amqp.Table)
	count, isInt64 := first["count"].(int64)
	check(isInt64 && count == 1 && first["reason"] == "rejected", "x-death says rejected once, its count an int64")

	// A consumer through B of the queue on A hears of its deletion through C.
	watch := channel(b)
	cancelled := watch.NotifyCancel(make(chan string, 1))
	_, err = watch.Consume(queue, "go-watcher", true, false, false, false, nil)
	must(err, "consume through B")
	_, err = channel(c).QueueDelete(queue, false, false, false)
	must(err, "delete the queue through C")
	select {
	case tag := <-cancelled:
		check(tag == "go-watcher", "a consumer through B hears basic.cancel when its queue is deleted through C")
	case <-time.After(wait):
		check(false, "a consumer through B hears basic.cancel when its queue is deleted through C")
	}
}
